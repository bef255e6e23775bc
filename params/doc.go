// Package params holds the server parameters and answers getParameter
// and setParameter. Most parameters report what Lethe does, for drivers'
// and tools' test harnesses and for monitoring; logLevel and
// allowDiskUseByDefault can be changed at run time.
//
// It holds no locks: the values that change are atomics (the log level's
// and allowDiskUseByDefault), read by every find and aggregate.
package params
