// Checks with the MongoDB Node.js driver that multi-document transactions
// work: withTransaction commits what its callback wrote, across two
// collections, and nothing is visible outside before the commit; a
// transaction aborted with abortTransaction leaves nothing; a callback that
// throws aborts its transaction; count, which mongod refuses in a
// transaction, is refused with OperationNotSupportedInTransaction (263).
// Prints OK.
// Usage: node txn.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const db = client.db('test');
  const coll = db.collection('txn_node');
  const other = db.collection('txn_node_other');
  await coll.deleteMany({});
  await other.deleteMany({});
  const session = client.startSession();
  try {
    // withTransaction commits; before the commit nobody else sees a thing.
    await session.withTransaction(async () => {
      await coll.insertOne({ _id: 1 }, { session });
      await other.insertOne({ _id: 1 }, { session });
      assert.equal(await coll.countDocuments({}, { session }), 1, 'the transaction does not see its own insert');
      assert.equal(await coll.countDocuments({}), 0, 'an uncommitted insert is visible outside');
    });
    assert.equal(await coll.countDocuments({}), 1, 'the committed insert is not visible');
    assert.equal(await other.countDocuments({}), 1, 'the committed insert of the other collection is not visible');

    // startTransaction + writes + abortTransaction leaves nothing.
    session.startTransaction();
    await coll.insertOne({ _id: 2 }, { session });
    await coll.updateOne({ _id: 1 }, { $set: { x: 1 } }, { session });
    await session.abortTransaction();
    assert.equal(await coll.countDocuments({}), 1, 'the aborted insert is visible');
    assert.equal(await coll.countDocuments({ x: 1 }), 0, 'the aborted update is visible');

    // A callback that throws: withTransaction aborts and rethrows.
    await assert.rejects(
      session.withTransaction(async () => {
        await coll.insertOne({ _id: 3 }, { session });
        throw new Error('callback failed');
      }),
      /callback failed/,
    );
    assert.equal(await coll.countDocuments({ _id: 3 }), 0, 'the insert of a failed callback is visible');

    // count is refused in a transaction, as by mongod.
    session.startTransaction();
    await assert.rejects(
      db.command({ count: 'txn_node' }, { session }),
      (err) => err.code === 263,
    );
    await session.abortTransaction().catch(() => {});
  } finally {
    await session.endSession();
  }
  console.log('OK');
} finally {
  await client.close();
}
