"""Watches a collection with pymongo on a one-member replica set: sees an
insert, an update and a delete in order, then resumes after the first event.
Prints OK.

Usage: python3 changestream.py <uri>
"""
import sys

from pymongo import MongoClient

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
try:
    coll = client.test.cs_py
    coll.insert_one({"_id": 0})
    with coll.watch(max_await_time_ms=100) as stream:
        assert stream.try_next() is None
        coll.insert_one({"_id": 1, "a": 1})
        coll.update_one({"_id": 1}, {"$set": {"a": 2}})
        coll.delete_one({"_id": 1})
        ins = stream.next()
        assert ins["operationType"] == "insert", ins
        assert ins["fullDocument"] == {"_id": 1, "a": 1}, ins
        upd = stream.next()
        assert upd["operationType"] == "update", upd
        assert upd["updateDescription"]["updatedFields"] == {"a": 2}, upd
        dele = stream.next()
        assert dele["operationType"] == "delete", dele
        assert dele["documentKey"] == {"_id": 1}, dele
    with coll.watch(resume_after=ins["_id"]) as resumed:
        assert resumed.next()["operationType"] == "update"
    print("OK")
finally:
    client.close()
