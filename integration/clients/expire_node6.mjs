// Expire events for applications on the Node.js driver 6.x, the one
// mongoose 8 bundles (mongodb ~6.20). That driver keeps only the
// $changeStream options it knows, so watch([], {showExpireEvents: true})
// opens a stream without it: such a stream sees the purge's delete, as
// MongoDB reports a TTL deletion. Two ways get the expire event, then the
// delete: watch([], {showExpandedEvents: true}), since expire is an
// expanded event type, and an aggregate that names the $changeStream stage
// itself with showExpireEvents. Needs --clock=manual (the script moves the
// clock with advanceClock). Prints OK.
// Usage: node expire_node6.mjs <uri>
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb6';

const require = createRequire(import.meta.url);
assert.match(require('mongodb6/package.json').version, /^6\./);

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const db = client.db('test');
  const coll = db.collection('expire_node6');
  await coll.drop().catch(() => {});
  await coll.createIndex({ _ts: 1 }, { expireAfterSeconds: -1 });
  await coll.insertOne({ _id: 1, ttl: 5 });

  // The driver drops the option it does not know.
  const watched = coll.watch([], { showExpireEvents: true, maxAwaitTimeMS: 100 });
  await watched.tryNext(); // opens the cursor before the expiry
  // It passes showExpandedEvents, which brings expire events with it.
  const expanded = coll.watch([], { showExpandedEvents: true, maxAwaitTimeMS: 100 });
  await expanded.tryNext();
  // Lethe's option, in the stage the application writes.
  const raw = coll.aggregate([{ $changeStream: { showExpireEvents: true } }]);
  assert.equal(await raw.tryNext(), null);

  await client.db('admin').command({ advanceClock: 5 });
  const expired = await raw.next();
  assert.equal(expired.operationType, 'expire');
  assert.deepEqual(expired.documentKey, { _id: 1 });
  assert.ok(expired._id._data, 'an expire event carries its resume token');
  const purged = await raw.next();
  assert.equal(purged.operationType, 'delete');
  assert.deepEqual(purged.documentKey, { _id: 1 });
  await raw.close();

  const expandedExpire = await expanded.next();
  assert.equal(expandedExpire.operationType, 'expire', 'a showExpandedEvents stream gets expire events');
  assert.deepEqual(expandedExpire.documentKey, { _id: 1 });
  const expandedDelete = await expanded.next();
  assert.equal(expandedDelete.operationType, 'delete');
  await expanded.close();

  const seen = await watched.next();
  assert.equal(seen.operationType, 'delete', 'the driver sent the option after all');
  assert.deepEqual(seen.documentKey, { _id: 1 });
  await watched.close();
  console.log('OK');
} finally {
  await client.close();
}
