package addresses

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// announce broadcasts a gratuitous ARP reply for a on link: "a is at link's hardware address",
// so neighbours replace a cached entry of the address's previous holder. Links without an
// Ethernet address (loopback) need none.
func announce(link netlink.Link, a netip.Addr) error {
	mac := link.Attrs().HardwareAddr
	if len(mac) != 6 || !a.Is4() || link.Attrs().Flags&unix.IFF_NOARP != 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ARP)))
	if err != nil {
		return fmt.Errorf("packet socket: %w", err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: link.Attrs().Index, Halen: 6}
	copy(to.Addr[:], broadcast[:])
	if err := unix.Sendto(fd, gratuitousARP([6]byte(mac), a.As4()), 0, to); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

var broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// gratuitousARP is the Ethernet frame of an ARP reply announcing ip at mac to everyone (RFC 5227
// section 3: sender and target protocol address both ip).
func gratuitousARP(mac [6]byte, ip [4]byte) []byte {
	f := make([]byte, 0, 42)
	f = append(f, broadcast[:]...)
	f = append(f, mac[:]...)
	f = binary.BigEndian.AppendUint16(f, unix.ETH_P_ARP)
	f = binary.BigEndian.AppendUint16(f, 1)      // hardware: Ethernet
	f = binary.BigEndian.AppendUint16(f, 0x0800) // protocol: IPv4
	f = append(f, 6, 4)
	f = binary.BigEndian.AppendUint16(f, 2) // reply
	f = append(f, mac[:]...)
	f = append(f, ip[:]...)
	f = append(f, broadcast[:]...)
	f = append(f, ip[:]...)
	return f
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
