"""Checks retryable writes with pymongo against a one-member replica set run
with --enable-test-commands: an insert and an $inc whose connection the
server closes (failCommand) are retried and apply once. (The pymongo of
Debian's python3-pymongo does not retry on a writeConcernError; the Go and
Node.js checks cover that.) Prints OK. Usage: python3 retryable.py <uri>"""
import sys

from pymongo import MongoClient

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)


def fail_once(cmd, **failure):
    client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                          "data": {"failCommands": [cmd], **failure}})


try:
    coll = client.test.retry_py
    coll.delete_many({})
    fail_once("insert", closeConnection=True)
    coll.insert_one({"_id": 1, "n": 0})
    assert coll.count_documents({}) == 1
    fail_once("update", closeConnection=True)
    res = coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
    assert res.modified_count == 1, res.raw_result
    doc = coll.find_one({"_id": 1})
    assert doc["n"] == 1, f"the retried $inc applied {doc['n']} times"
    print("OK")
finally:
    client.close()
