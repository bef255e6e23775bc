// A store finder through mongosh: run by integration/geo_test.go. The
// stores and queries follow the manual's geospatial tutorial
// (https://www.mongodb.com/docs/manual/tutorial/geospatial-tutorial/) and
// the $near, $geoWithin and $geoNear pages.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function codeOf(fn) {
  try { fn(); } catch (e) { return e.code; }
  return 0;
}

db.stores.drop();
db.stores.insertMany([
  { name: 'Union Square', location: { type: 'Point', coordinates: [-73.9903, 40.7359] } },
  { name: 'Chelsea', location: { type: 'Point', coordinates: [-73.9995, 40.7465] } },
  { name: 'Midtown', location: { type: 'Point', coordinates: [-73.9845, 40.7549] } },
  { name: 'Harlem', location: { type: 'Point', coordinates: [-73.9465, 40.8116] } },
  { name: 'Brooklyn', location: { type: 'Point', coordinates: [-73.9442, 40.6782] } },
  { name: 'Newark', location: { type: 'Point', coordinates: [-74.1724, 40.7357] } },
]);
check(db.stores.createIndex({ location: '2dsphere' }) === 'location_2dsphere', 'createIndex');
const here = { type: 'Point', coordinates: [-73.9911, 40.7370] };

// The three nearest stores within 3 km, nearest first.
const near = db.stores.find({ location: { $near: { $geometry: here, $maxDistance: 3000 } } }).limit(3).toArray();
check(near.map(s => s.name).join() === 'Union Square,Chelsea,Midtown', '$near order: ' + near.map(s => s.name).join());

// All of them, nearest first, without a bound.
const all = db.stores.find({ location: { $nearSphere: { $geometry: here } } }).toArray().map(s => s.name);
check(all.join() === 'Union Square,Chelsea,Midtown,Brooklyn,Harlem,Newark', '$nearSphere order: ' + all.join());

// With the distances, in kilometres.
const withDist = db.stores.aggregate([
  { $geoNear: { near: here, distanceField: 'km', distanceMultiplier: 0.001, spherical: true } },
  { $limit: 2 },
]).toArray();
check(withDist.length === 2 && withDist[0].name === 'Union Square' && withDist[0].km < 0.2 && withDist[1].km > withDist[0].km, '$geoNear: ' + JSON.stringify(withDist));

// Stores within 5 km: $geoWithin needs no order.
check(db.stores.countDocuments({ location: { $geoWithin: { $centerSphere: [here.coordinates, 5 / 6378.1] } } }) === 3, '$centerSphere count');

// The explain of the plan.
const ex = db.stores.find({ location: { $near: { $geometry: here } } }).explain();
check(JSON.stringify(ex).includes('GEO_NEAR_2DSPHERE'), 'explain: ' + JSON.stringify(ex.queryPlanner));

// A store with a broken location is refused while the index exists.
check(codeOf(() => db.stores.insertOne({ name: 'Nowhere', location: { type: 'Point', coordinates: [-200, 40] } })) === 16755, 'bad GeoJSON refused with 16755');

// $near needs a geospatial index.
db.noindex.drop();
db.noindex.insertOne({ location: here });
check(codeOf(() => db.noindex.find({ location: { $near: { $geometry: here } } }).toArray()) === 291, '$near without an index fails with 291');
print('OK');
