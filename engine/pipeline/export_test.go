package pipeline

// The helpers of the spilling tests, for windowspill_test.go, whose
// package pipeline_test may import package window.
var (
	StagesOf        = stagesOf
	Generated       = generated
	Permuted        = permuted
	RunWatched      = runWatched
	CheckSpilledRun = checkSpilledRun
)
