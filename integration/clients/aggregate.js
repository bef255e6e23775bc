// A reporting user's aggregations in mongosh: joins, facets, per-day
// charts, window functions, views, explain and spilling. Run by
// integration/mongosh_test.go; any failed check throws, which makes mongosh
// exit non-zero.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

const shop = db.getSiblingDB('reports');
shop.dropDatabase();
shop.customers.insertMany([
  { _id: 1, name: 'Ada', city: 'Paris' },
  { _id: 2, name: 'Bo', city: 'Oslo' },
  { _id: 3, name: 'Cy', city: 'Paris' },
]);
shop.orders.createIndex({ customer: 1 });
shop.orders.insertMany([
  { _id: 10, customer: 1, items: ['pen', 'ink'], total: 12.5, at: ISODate('2026-03-01T09:00:00Z') },
  { _id: 11, customer: 1, items: ['pad'], total: 4, at: ISODate('2026-03-01T22:30:00Z') },
  { _id: 12, customer: 2, items: ['pen'], total: 3, at: ISODate('2026-03-02T10:00:00Z') },
  { _id: 13, customer: 3, items: [], total: 0, at: ISODate('2026-03-03T23:59:00Z') },
]);

// $lookup and $unwind: spend per customer name.
const spend = shop.customers.aggregate([
  { $lookup: { from: 'orders', localField: '_id', foreignField: 'customer', as: 'orders' } },
  { $unwind: '$orders' },
  { $group: { _id: '$name', total: { $sum: '$orders.total' }, n: { $count: {} } } },
  { $sort: { total: -1 } },
]).toArray();
check(same(spend, [{ _id: 'Ada', total: 16.5, n: 2 }, { _id: 'Bo', total: 3, n: 1 }, { _id: 'Cy', total: 0, n: 1 }]), '$lookup + $unwind + $group: ' + JSON.stringify(spend));

// A per-day chart in Paris time: 22:30 UTC on March 1st is March 1st
// 23:30 there, 23:59 UTC on March 3rd is already March 4th.
const perDay = shop.orders.aggregate([
  { $group: { _id: { $dateToString: { date: '$at', format: '%Y-%m-%d', timezone: 'Europe/Paris' } }, n: { $sum: 1 } } },
  { $sort: { _id: 1 } },
]).toArray();
check(same(perDay.map(d => d._id), ['2026-03-01', '2026-03-02', '2026-03-04']), '$dateToString per day: ' + JSON.stringify(perDay));

// A paginated search page: one $facet gives the page and the count.
const page = shop.orders.aggregate([
  { $match: { total: { $gt: 0 } } },
  { $facet: {
    rows: [{ $sort: { total: -1 } }, { $skip: 1 }, { $limit: 1 }, { $project: { _id: 1 } }],
    count: [{ $count: 'n' }],
  } },
]).toArray();
check(same(page, [{ rows: [{ _id: 11 }], count: [{ n: 3 }] }]), '$facet page: ' + JSON.stringify(page));

// A running total per customer with $setWindowFields.
const running = shop.orders.aggregate([
  { $setWindowFields: { partitionBy: '$customer', sortBy: { at: 1 }, output: { running: { $sum: '$total', window: { documents: ['unbounded', 'current'] } } } } },
  { $match: { customer: 1 } },
  { $project: { running: 1 } },
]).toArray();
check(same(running, [{ _id: 10, running: 12.5 }, { _id: 11, running: 16.5 }]), '$setWindowFields running total: ' + JSON.stringify(running));

// A view, read by find and listed by the shell.
shop.createView('parisians', 'customers', [{ $match: { city: 'Paris' } }, { $project: { city: 0 } }]);
check(same(shop.parisians.find().sort({ _id: 1 }).toArray(), [{ _id: 1, name: 'Ada' }, { _id: 3, name: 'Cy' }]), 'find through a view');
check(shop.getCollectionInfos({ name: 'parisians' })[0].type === 'view', 'listCollections says view');
let refused = false;
try { shop.parisians.insertOne({ name: 'Di' }); } catch (e) { refused = e.code === 166; }
check(refused, 'a write to a view fails with 166');

// $merge keeps a summary collection up to date.
shop.orders.aggregate([
  { $group: { _id: '$customer', total: { $sum: '$total' } } },
  { $merge: { into: 'totals', whenMatched: 'replace', whenNotMatched: 'insert' } },
]);
check(shop.totals.findOne({ _id: 1 }).total === 16.5, '$merge into totals');

// explain shows what the planner took.
const plan = shop.orders.explain().aggregate([{ $match: { customer: 2 } }, { $group: { _id: null, n: { $sum: 1 } } }]);
check(JSON.stringify(plan).includes('IXSCAN'), 'explain of a pipeline shows the index scan: ' + JSON.stringify(plan));

// A $expr that fails on a document fails the query, as in MongoDB.
let failed = false;
try { shop.customers.find({ $expr: { $add: ['$name', 1] } }).toArray(); } catch (e) { failed = e.code === 14; }
check(failed, '$expr runtime error fails the find with 14');

print('OK');
