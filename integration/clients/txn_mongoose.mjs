// Checks with mongoose that session.withTransaction works as an ODM user
// expects: the commit applies every write at once, an error thrown in the
// callback aborts and leaves nothing, and a write conflict (a plain write
// of the same document after the transaction's snapshot) is retried by
// withTransaction until it commits. Prints OK.
// Usage: node txn_mongoose.mjs <uri>
import assert from 'node:assert/strict';
import mongoose from 'mongoose';

const conn = await mongoose.createConnection(process.argv[2], { serverSelectionTimeoutMS: 5000 }).asPromise();
try {
  const Account = conn.model('Account', new mongoose.Schema({ _id: Number, balance: Number }), 'txn_mongoose');
  await Account.deleteMany({});
  await Account.create([{ _id: 1, balance: 100 }, { _id: 2, balance: 100 }]);

  const session = await conn.startSession();
  try {
    await session.withTransaction(async () => {
      await Account.updateOne({ _id: 1 }, { $inc: { balance: -30 } }, { session });
      // Outside the transaction nothing moved yet.
      assert.equal((await Account.findById(1).lean()).balance, 100, 'a write of an open transaction is visible outside it');
      await Account.updateOne({ _id: 2 }, { $inc: { balance: 30 } }, { session });
    });
    assert.deepEqual((await Account.find().sort({ _id: 1 }).lean()).map((a) => a.balance), [70, 130], 'the commit');

    await assert.rejects(session.withTransaction(async () => {
      await Account.updateOne({ _id: 1 }, { $inc: { balance: -70 } }, { session });
      throw new Error('insufficient funds');
    }), /insufficient funds/);
    assert.deepEqual((await Account.find().sort({ _id: 1 }).lean()).map((a) => a.balance), [70, 130], 'the abort left a write');

    let attempts = 0;
    await session.withTransaction(async () => {
      attempts++;
      await Account.findById(2, null, { session }).lean(); // the snapshot
      if (attempts === 1) {
        await Account.updateOne({ _id: 2 }, { $inc: { balance: 1 } }); // a plain write after it
      }
      await Account.updateOne({ _id: 2 }, { $inc: { balance: 10 } }, { session });
    });
    assert.equal(attempts, 2, 'withTransaction did not retry the write conflict once');
    assert.equal((await Account.findById(2).lean()).balance, 141, 'the retried transaction');
  } finally {
    await session.endSession();
  }
  console.log('OK');
} finally {
  await conn.close();
}
