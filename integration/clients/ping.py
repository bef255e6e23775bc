"""Connects with pymongo, pings and reads buildInfo, and prints the results
as one JSON line. Usage: python3 ping.py <uri>"""
import json
import sys

from pymongo import MongoClient

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
try:
    ping = client.admin.command("ping")
    info = client.admin.command("buildInfo")
    print(json.dumps({"ok": ping["ok"], "version": info["version"]}))
finally:
    client.close()
