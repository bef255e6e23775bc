"""Connects with pymongo to a one-member replica set named in the URI,
writes and reads its write back in a causally consistent session, and
checks what the set says of itself. Prints OK. Usage: python3 replset.py <uri>"""
import sys

from pymongo import MongoClient
from pymongo.errors import WriteConcernError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
try:
    hello = client.admin.command("hello")
    assert hello["setName"] == "rs0", hello
    assert hello["isWritablePrimary"] is True, hello
    status = client.admin.command("replSetGetStatus")
    assert status["members"][0]["stateStr"] == "PRIMARY", status

    coll = client.test.get_collection(
        "rs_py", read_concern=ReadConcern("majority"), write_concern=WriteConcern(w="majority"))
    with client.start_session(causal_consistency=True) as session:
        coll.insert_one({"_id": 1, "at": "python"}, session=session)
        assert session.operation_time is not None, "the session saw no operationTime"
        assert coll.find_one({"_id": 1}, session=session)["at"] == "python"
    try:
        client.test.get_collection("rs_py", write_concern=WriteConcern(w=2)).insert_one({"_id": 2})
        raise AssertionError("w: 2 was satisfied by one member")
    except WriteConcernError as e:
        assert e.code == 100, e.details
    print("OK")
finally:
    client.close()
