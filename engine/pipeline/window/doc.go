// Package window is the $setWindowFields stage and its window functions:
// $rank, $shift, $derivative, $integral, $expMovingAvg, $locf,
// $linearFill, and the accumulators of package accum run over windows.
//
// It is a package of its own because it is a language of its own, with its
// window bounds, its partitions and its spilling sort, and kept package
// pipeline past the size the project allows. It imports pipeline and
// registers the stage there from its init (pipeline.RegisterStage), so it
// runs, flows and spills as pipeline's own stages do; package engine
// imports it for that, so every pipeline the engine compiles knows the
// stage. A program that compiles pipelines without the engine imports it
// itself.
package window
