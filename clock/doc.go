// Package clock is the time source of expiry, sessions and the oplog: the
// wall clock, and a manual clock that moves only when told to, for tests and
// --clock=manual. It sits at the bottom of the module and imports nothing of
// it, so that every layer can take a Clock without pointing up.
package clock
