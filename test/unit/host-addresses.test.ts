// Host addresses from the kernel: the local routing table and
// the routes of an interface, as /proc writes them. Fixture text copied from a machine of
// this kind, with docker0 idle (NO-CARRIER), which os.networkInterfaces() leaves out.
import { describe, expect, it } from 'vitest';
import { ipv4OfInterface, localIpv4FromFibTrie } from '../../src/network/host-addresses.js';

const ROUTE = [
  'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
  'eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0',
  'docker0\t00001EAC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0',
  'eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
  'br-1\t000013AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0',
].join('\n');

const FIB_TRIE = `Main:
  +-- 0.0.0.0/0 3 0 4
     +-- 127.0.0.0/8 2 0 2
           |-- 127.0.0.1
              /32 host LOCAL
        +-- 172.30.0.0/31 1 0 0
           |-- 172.30.0.0
              /16 link UNICAST
           |-- 172.30.0.1
              /32 host LOCAL
        |-- 172.30.255.255
           /32 link BROADCAST
           |-- 172.19.0.1
              /32 host LOCAL
           |-- 192.0.2.2
              /32 host LOCAL
`;

describe('host addresses from the kernel', () => {
  it('lists the local addresses of the local table', () => {
    expect(localIpv4FromFibTrie(FIB_TRIE).sort()).toEqual([
      '127.0.0.1',
      '172.19.0.1',
      '172.30.0.1',
      '192.0.2.2',
    ]);
  });

  it("finds an idle docker0's address through its route", () => {
    expect(ipv4OfInterface('docker0', ROUTE, FIB_TRIE)).toEqual(['172.30.0.1']);
    expect(ipv4OfInterface('eth0', ROUTE, FIB_TRIE)).toEqual(['192.0.2.2']);
    expect(ipv4OfInterface('br-1', ROUTE, FIB_TRIE)).toEqual(['172.19.0.1']);
  });

  it('finds nothing for an interface without a route', () => {
    expect(ipv4OfInterface('docker1', ROUTE, FIB_TRIE)).toEqual([]);
    expect(ipv4OfInterface('docker0', '', FIB_TRIE)).toEqual([]);
  });
});
