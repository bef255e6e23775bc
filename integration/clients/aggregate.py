"""A Python application's aggregations through pymongo: a join, dates with a
time zone, a bucketed histogram, a view and $out. Prints OK, or raises.
Usage: python3 aggregate.py <uri>"""
import datetime
import sys

from pymongo import MongoClient

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
try:
    db = client.pyreports
    client.drop_database("pyreports")
    db.users.insert_many([{"_id": 1, "name": "Ada"}, {"_id": 2, "name": "Bo"}])
    utc = datetime.timezone.utc
    db.visits.insert_many([
        {"user": 1, "at": datetime.datetime(2026, 7, 1, 3, 0, tzinfo=utc), "ms": 120},
        {"user": 1, "at": datetime.datetime(2026, 7, 1, 5, 0, tzinfo=utc), "ms": 480},
        {"user": 2, "at": datetime.datetime(2026, 7, 2, 12, 0, tzinfo=utc), "ms": 900},
    ])

    joined = list(db.users.aggregate([
        {"$lookup": {"from": "visits", "localField": "_id", "foreignField": "user", "as": "v"}},
        {"$project": {"name": 1, "visits": {"$size": "$v"}, "slowest": {"$max": "$v.ms"}}},
        {"$sort": {"_id": 1}},
    ]))
    assert joined == [{"_id": 1, "name": "Ada", "visits": 2, "slowest": 480},
                      {"_id": 2, "name": "Bo", "visits": 1, "slowest": 900}], joined

    # 03:00 UTC on July 1st is still June 30th in New York (UTC-4 in July).
    days = list(db.visits.aggregate([
        {"$group": {"_id": {"$dateTrunc": {"date": "$at", "unit": "day", "timezone": "America/New_York"}}}},
        {"$sort": {"_id": 1}},
    ]))
    starts = [d["_id"] for d in days]
    assert starts == [datetime.datetime(2026, 6, 30, 4, 0), datetime.datetime(2026, 7, 1, 4, 0),
                      datetime.datetime(2026, 7, 2, 4, 0)], starts

    histogram = list(db.visits.aggregate([
        {"$bucket": {"groupBy": "$ms", "boundaries": [0, 250, 500, 1000], "output": {"n": {"$sum": 1}}}},
    ]))
    assert histogram == [{"_id": 0, "n": 1}, {"_id": 250, "n": 1}, {"_id": 500, "n": 1}], histogram

    db.command("create", "slow", viewOn="visits", pipeline=[{"$match": {"ms": {"$gte": 400}}}])
    assert db.slow.count_documents({}) == 2
    assert sorted(db.slow.distinct("user")) == [1, 2]

    db.visits.aggregate([{"$match": {"user": 1}}, {"$out": "ada_visits"}])
    assert db.ada_visits.count_documents({}) == 2
    print("OK")
finally:
    client.close()
