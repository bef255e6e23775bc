// Package collstats makes what the engine reports of a collection's use
// and size: the figures of collStats and dbStats (Stats) and the
// documents of the $collStats and $indexStats stages, with MongoDB's
// fields in its order.
//
// The engine measures the figures (a scan of the documents, the store's
// size estimates) and keeps the usage counters (package engine/usage);
// this package only shapes them, so it never imports the engine.
package collstats
