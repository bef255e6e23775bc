"""Checks multi-document transactions with pymongo's with_transaction: the
commit applies every write at once, an exception in the callback aborts
and leaves nothing, a write conflict (a plain write of the same document
after the transaction's snapshot) is retried until the transaction
commits, and a transaction spans two databases. Prints OK.
Usage: python3 txn.py <uri>"""
import sys

from pymongo import MongoClient
from pymongo.errors import OperationFailure

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)

try:
    a = client.txn_py.accounts
    b = client.txn_py_other.audit
    for c in (a, b):
        c.drop()
        c.database.create_collection(c.name)
    a.insert_many([{"_id": 1, "balance": 100}, {"_id": 2, "balance": 100}])

    with client.start_session() as s:
        def move(session):
            a.update_one({"_id": 1}, {"$inc": {"balance": -30}}, session=session)
            assert a.find_one({"_id": 1})["balance"] == 100, "an open transaction's write is visible outside it"
            a.update_one({"_id": 2}, {"$inc": {"balance": 30}}, session=session)
            b.insert_one({"_id": "move", "amount": 30}, session=session)
        s.with_transaction(move)
        assert [d["balance"] for d in a.find(sort=[("_id", 1)])] == [70, 130], "the commit"
        assert b.count_documents({}) == 1, "the commit in the second database"

        def failing(session):
            a.update_one({"_id": 1}, {"$inc": {"balance": -70}}, session=session)
            raise ValueError("insufficient funds")
        try:
            s.with_transaction(failing)
            raise AssertionError("the failing callback did not raise")
        except ValueError:
            pass
        assert [d["balance"] for d in a.find(sort=[("_id", 1)])] == [70, 130], "the abort left a write"

        attempts = []

        def conflicted(session):
            attempts.append(1)
            a.find_one({"_id": 2}, session=session)  # the snapshot
            if len(attempts) == 1:
                a.update_one({"_id": 2}, {"$inc": {"balance": 1}})  # a plain write after it
            a.update_one({"_id": 2}, {"$inc": {"balance": 10}}, session=session)
        s.with_transaction(conflicted)
        assert len(attempts) == 2, f"with_transaction ran the callback {len(attempts)} times, want 2"
        assert a.find_one({"_id": 2})["balance"] == 141, "the retried transaction"

        s.start_transaction()
        a.insert_one({"_id": 3}, session=s)
        s.abort_transaction()
        try:
            s.commit_transaction()
            raise AssertionError("a commit after an abort succeeded")
        except Exception as e:  # pymongo raises InvalidOperation before sending
            assert "abort" in str(e).lower() or isinstance(e, OperationFailure), e
        assert a.count_documents({"_id": 3}) == 0, "an aborted insert is visible"
    print("OK")
finally:
    client.close()
