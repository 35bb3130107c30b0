package containment

// MayStartIn and CommonAncestor are mayStartIn and commonAncestor, for
// the tests of package containment_test.
var (
	MayStartIn     = mayStartIn
	CommonAncestor = commonAncestor
)
