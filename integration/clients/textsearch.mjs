// A Node.js application's text search through the official driver: the
// manual's stores (https://www.mongodb.com/docs/manual/core/link-text-indexes/),
// a text index on two fields, and a $text search sorted by its score, in a
// find and in an aggregation. Prints OK, or throws.
// Usage: node textsearch.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const db = client.db('nodetext');
  await db.dropDatabase();
  const stores = db.collection('stores');
  await stores.insertMany([
    { _id: 1, name: 'Java Hut', description: 'Coffee and cakes' },
    { _id: 2, name: 'Burger Buns', description: 'Gourmet hamburgers' },
    { _id: 3, name: 'Coffee Shop', description: 'Just coffee' },
    { _id: 4, name: 'Clothes Clothes Clothes', description: 'Discount clothing' },
    { _id: 5, name: 'Java Shopping', description: 'Indonesian goods' },
    { _id: 6, name: 'NYC_Coffee Shop', description: 'local NYC coffee' },
  ]);
  const name = await stores.createIndex({ name: 'text', description: 'text' });
  assert.equal(name, 'name_text_description_text');

  // The manual's "order a list of coffee shops in order of relevance".
  const found = await stores.find(
    { $text: { $search: 'coffee shop cake' } },
    { projection: { score: { $meta: 'textScore' } } },
  ).sort({ score: { $meta: 'textScore' } }).toArray();
  assert.deepEqual(found.map((d) => d._id), [3, 1, 6, 5]);
  // Scores by MongoDB's formula: Coffee Shop has coffee twice (once in
  // each field, 0.75 each) and shop once (0.75).
  assert.equal(found[0].score, 2.25);
  assert.equal(found[0].name, 'Coffee Shop');

  const agg = await stores.aggregate([
    { $match: { $text: { $search: 'java -shopping' } } },
    { $project: { name: 1, score: { $meta: 'textScore' } } },
    { $sort: { score: -1 } },
  ]).toArray();
  assert.deepEqual(agg, [{ _id: 1, name: 'Java Hut', score: 0.75 }]);

  const phrase = await stores.countDocuments({ $text: { $search: '"coffee shop"' } });
  assert.equal(phrase, 2);

  await db.collection('plain').insertOne({ _id: 1, about: 'coffee' });
  await assert.rejects(
    db.collection('plain').find({ $text: { $search: 'x' } }).toArray(),
    (err) => err.code === 27,
  );
  console.log('OK');
} finally {
  await client.close();
}
