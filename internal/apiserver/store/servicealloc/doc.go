// Package servicealloc hands out services' cluster IPs and node ports from bitmaps kept in
// RangeAllocation objects in storage, so every API server allocates from one state with
// compare-and-swap. It implements core.ServiceAllocator; the services strategy's hooks decide when
// to allocate and when to give back, the generic store decides when those hooks run.
//
// It must not import the API server's HTTP layer.
package servicealloc
