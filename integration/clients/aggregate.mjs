// A Node.js application's aggregations through the official driver: a
// correlated $lookup, $sortByCount, $unionWith, and a spilling $sort read
// batch by batch. Prints OK, or throws. Usage: node aggregate.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const db = client.db('nodereports');
  await db.dropDatabase();
  await db.collection('products').insertMany([
    { _id: 'pen', tags: ['office', 'cheap'], stock: 5 },
    { _id: 'ink', tags: ['office'], stock: 0 },
    { _id: 'mug', tags: ['kitchen', 'cheap'], stock: 2 },
  ]);
  await db.collection('orders').insertMany([
    { _id: 1, product: 'pen', qty: 2 },
    { _id: 2, product: 'ink', qty: 9 },
    { _id: 3, product: 'pen', qty: 1 },
  ]);

  // Orders whose quantity passes the product's stock, by a correlated
  // sub-pipeline.
  const short = await db.collection('orders').aggregate([
    { $lookup: {
      from: 'products', let: { p: '$product', q: '$qty' },
      pipeline: [{ $match: { $expr: { $and: [{ $eq: ['$_id', '$$p'] }, { $lt: ['$stock', '$$q'] }] } } }],
      as: 'short',
    } },
    { $match: { short: { $ne: [] } } },
    { $project: { _id: 1 } },
  ]).toArray();
  assert.deepEqual(short, [{ _id: 2 }]);

  const tags = await db.collection('products').aggregate([{ $unwind: '$tags' }, { $sortByCount: '$tags' }, { $sort: { count: -1, _id: 1 } }]).toArray();
  assert.deepEqual(tags, [{ _id: 'cheap', count: 2 }, { _id: 'office', count: 2 }, { _id: 'kitchen', count: 1 }]);

  const names = await db.collection('products').aggregate([
    { $project: { _id: 1 } },
    { $unionWith: { coll: 'orders', pipeline: [{ $project: { _id: { $toString: '$_id' } } }] } },
    { $sort: { _id: 1 } },
  ]).toArray();
  assert.deepEqual(names.map((d) => d._id), ['1', '2', '3', 'ink', 'mug', 'pen']);

  // 3,000 documents of 40 KB (120 MB) sorted on a computed key: past the
  // 100 MiB a blocking sort holds, so the server spills (allowDiskUse is
  // on by default), and the driver reads the result in batches.
  const big = db.collection('big');
  const pad = 'x'.repeat(40 * 1024);
  for (let i = 0; i < 3000; i += 500) {
    await big.insertMany(Array.from({ length: 500 }, (_, j) => ({ _id: i + j, pad })));
  }
  let expected = 2999;
  for await (const d of big.aggregate([{ $sort: { _id: -1 } }, { $project: { pad: 0 } }], { batchSize: 100 })) {
    assert.equal(d._id, expected--);
  }
  assert.equal(expected, -1);
  console.log('OK');
} finally {
  await client.close();
}
