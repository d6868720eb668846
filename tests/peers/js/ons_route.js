'use strict';
// ali-ons (npm, pure JavaScript) against a name server given on the command line:
//
//   node ons_route.js NAMESRV TOPIC [SEND_COUNT PREFIX START]
//
// Reads TOPIC's route with the client's own name-server call (GET_ROUTEINFO_BY_TOPIC, as the client sends it) and
// prints it as `ROUTE <json>` (queueDatas/brokerDatas as ali-ons parsed them), then sends SEND_COUNT messages with
// bodies PREFIX-START … (`SENT <status> <brokerName> <queueId>` each) and prints `OK`.
//
// `nameSrv` is always given, and the HTTP client throws: ali-ons would otherwise look the name server up over HTTP
// at an Aliyun address. The access key makes it sign requests, adding the AccessKey/Signature/OnsChannel ext fields
// a name server must ignore.
const { Producer, Message } = require('ali-ons');

const [ namesrv, topic, sendCount, prefix, start ] = process.argv.slice(2);
const httpclient = {
  async request(url) {
    throw new Error(`no HTTP name-server lookup allowed (${url})`);
  },
};
const quiet = { info() {}, warn() {}, debug() {}, error: console.error };

async function main() {
  const producer = new Producer({
    nameSrv: namesrv,
    httpclient,
    logger: quiet,
    producerGroup: 'interop_ons_pg',
    accessKey: 'interop',
    secretKey: 'interop',
    sendMsgTimeout: 10000,
  });
  await producer.ready();
  const route = await producer._mqClient.getTopicRouteInfoFromNameServer(topic, 10000);
  console.log('ROUTE ' + JSON.stringify(route));
  const n = Number(sendCount || 0);
  for (let i = 0; i < n; i++) {
    const result = await producer.send(new Message(topic, 'ons', `${prefix}-${Number(start || 0) + i}`));
    console.log(`SENT ${result.sendStatus} ${result.messageQueue.brokerName} ${result.messageQueue.queueId}`);
  }
  await producer.close();
  console.log('OK');
}

main().then(() => process.exit(0), err => {
  console.error(err && err.stack || err);
  process.exit(1);
});
