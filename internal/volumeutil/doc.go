// Package volumeutil holds the volume rules that both the persistentvolume-binder controller and the
// scheduler's VolumeBinding plugin apply, so that the volume the scheduler plans for a claim is the
// one the binder would choose. It depends only on the API types.
package volumeutil
