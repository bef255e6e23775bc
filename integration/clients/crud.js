// Everyday mongosh usage against Lethe: run by integration/mongosh_test.go.
// Any failed check throws, which makes mongosh exit non-zero.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const shop = db.getSiblingDB('shop');
shop.dropDatabase();
shop.orders.insertOne({ _id: 1, item: 'pen', qty: 3 });
shop.orders.insertMany([{ _id: 2, item: 'ink', qty: 10 }, { _id: 3, item: 'pad', qty: 1 }]);
check(shop.orders.findOne({ _id: 2 }).item === 'ink', 'findOne');
check(shop.orders.find({ qty: { $gte: 3 } }).sort({ qty: -1 }).toArray().map(d => d._id).join() === '2,1', 'find sorted');
check(shop.orders.updateOne({ _id: 3 }, { $inc: { qty: 4 } }).modifiedCount === 1, 'updateOne');
check(shop.orders.findOne({ _id: 3 }).qty === 5, 'after $inc');
check(shop.orders.replaceOne({ _id: 1 }, { item: 'pencil', qty: 2 }).matchedCount === 1, 'replaceOne');
check(shop.orders.deleteOne({ _id: 2 }).deletedCount === 1, 'deleteOne');
check(shop.orders.countDocuments({}) === 2, 'countDocuments');
check(shop.orders.estimatedDocumentCount() === 2, 'estimatedDocumentCount');
check(shop.orders.distinct('item').join() === 'pad,pencil', 'distinct');
shop.orders.createIndex({ item: 1 }, { unique: true });
let dup = false;
try { shop.orders.insertOne({ item: 'pad' }); } catch (e) { dup = e.code === 11000; }
check(dup, 'unique index refuses a duplicate with 11000');
check(shop.orders.getIndexes().length === 2, 'getIndexes');
shop.createCollection('customers');
check(shop.getCollectionNames().join() === 'customers,orders', 'getCollectionNames');
check(db.getMongo().getDBNames().includes('shop'), 'getDBNames');
const agg = shop.orders.aggregate([{ $group: { _id: null, total: { $sum: '$qty' } } }]).toArray();
check(agg.length === 1 && agg[0].total === 7, 'aggregate $group');
check(shop.orders.stats().count === 2, 'stats');
shop.orders.drop();
check(!shop.getCollectionNames().includes('orders'), 'drop');
print('OK');
