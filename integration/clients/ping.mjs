// Connects with the MongoDB Node.js driver, pings and reads buildInfo, and
// prints the results as one JSON line. Usage: node ping.mjs <uri>
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const admin = client.db('admin');
  const ping = await admin.command({ ping: 1 });
  const info = await admin.command({ buildInfo: 1 });
  console.log(JSON.stringify({ ok: ping.ok, version: info.version }));
} finally {
  await client.close();
}
