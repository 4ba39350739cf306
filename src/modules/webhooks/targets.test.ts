import { describe, expect, it } from 'vitest';
import { addressRefusal, targetRefusal } from './targets.ts';

describe('addressRefusal', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.5.5.5', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.10', 'private'],
    ['fc00::1', 'unique local'],
    ['fd00:ec2::254', 'unique local'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.251', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:192.168.1.1', 'private'],
    ['64:ff9b::a00:1', 'reserved'],
  ])('refuses %s (%s)', (address, kind) => {
    expect(addressRefusal(address)).toContain(kind);
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '93.184.215.14', '2606:4700:4700::1111'])('allows public %s', (address) => {
    expect(addressRefusal(address)).toBeNull();
  });
});

describe('targetRefusal', () => {
  const resolveTo = (...addresses: string[]) => async () => addresses;

  it('checks literal hosts without resolving, in every spelling the URL parser accepts', async () => {
    const never = async () => {
      throw new Error('no lookup expected');
    };
    for (const url of ['http://127.0.0.1/', 'http://0x7f.1/', 'http://2130706433/', 'http://[::1]/', 'http://[::ffff:7f00:1]/', 'https://169.254.169.254/latest']) {
      expect(await targetRefusal(new URL(url), never), url).toMatch(/loopback|link-local/);
    }
    expect(await targetRefusal(new URL('https://93.184.215.14/hook'), never)).toBeNull();
  });

  it('refuses a name when any of its addresses is refused, or when it does not resolve', async () => {
    expect(await targetRefusal(new URL('https://hooks.example/'), resolveTo('93.184.215.14'))).toBeNull();
    expect(await targetRefusal(new URL('https://hooks.example/'), resolveTo('93.184.215.14', '10.0.0.5'))).toBe('hooks.example resolves to 10.0.0.5, a private address');
    expect(await targetRefusal(new URL('https://hooks.example/'), resolveTo())).toContain('does not resolve');
    const nx = async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    expect(await targetRefusal(new URL('https://hooks.example/'), nx)).toBe('hooks.example does not resolve (ENOTFOUND)');
  });
});
