// Package endpoint is the Endpoints controller: for every Service with a
// selector it writes an Endpoints object of the same name listing the
// matching pods' IPs, ready ones in addresses and the others in
// notReadyAddresses (all ready with publishNotReadyAddresses), with the
// service's ports resolved per pod (named target ports looked up in the
// pod's container ports) and addresses grouped into subsets by port set.
// Services without a selector are left to their users.
//
// It reaches the cluster only through client-go.
package endpoint
