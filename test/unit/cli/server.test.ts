/** `agent-jobs server` defaults its port from a local TEMPORAL_ADDRESS. */
import { defaultServerPort } from '../../../src/cli/commands/server';

describe('defaultServerPort', () => {
  test.each([
    [undefined, 7233],
    ['', 7233],
    ['127.0.0.1:7300', 7300],
    ['localhost:17233', 17233],
    ['LOCALHOST:9000', 9000],
    ['127.0.0.2:1', 1],
    ['0.0.0.0:7444', 7444],
    ['[::1]:7555', 7555],
    ['localhost', 7233],
    ['temporal.example.com:7300', 7233],
    ['my-ns.a1b2c.tmprl.cloud:7233', 7233],
    ['10.0.0.5:7300', 7233],
    ['127.0.0.1:99999', 7233],
  ])('TEMPORAL_ADDRESS=%j gives port %d', (address, expected) => {
    expect(defaultServerPort(address === undefined ? {} : { TEMPORAL_ADDRESS: address })).toBe(expected);
  });
});
