//go:build !race

package sim

// raceEnabled says the race detector is on: the long single-threaded
// runs of the simulator, in which it has nothing to find, are cut short.
const raceEnabled = false
