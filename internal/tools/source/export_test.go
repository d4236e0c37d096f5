package source

// Helpers and manifests of the package's tests, for its external tests
// (cluster_serve_test.go).
var (
	Hub           = hub
	TestContext   = testContext
	Write         = write
	Find          = find
	LayerNames    = layerNames
	BatchLevel    = batchLevel
	BatchSchema   = batchSchema
	GlobalDefault = globalDefault
)
