// Drives the web console in Debian's chromium (headless) for tests/interop/console.rs.
//
//   node console_test.mjs BASE_URL CLUSTER BROKER_NAME BROKER_ADDR TOPIC ARTIFACT_DIR
//
// Talks to the Rust test in lines. Phase 1: loads the page, checks that the broker is listed, searches TOPIC and
// checks its route, then prints READY. The test then stops the broker and writes STOPPED on stdin. Phase 2: waits
// until the feed shows the broker leaving and the table no longer lists it, prints OK and exits 0. Any failure
// exits 1 with the reason on stderr and a screenshot `failure.png`. Every wait is for a condition, never a delay.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [base, cluster, brokerName, brokerAddr, topic, artifacts] = process.argv.slice(2);
if (!artifacts) {
  console.error('usage: console_test.mjs BASE_URL CLUSTER BROKER_NAME BROKER_ADDR TOPIC ARTIFACT_DIR');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 60_000 }; // generous: two shared cores, a JVM beside us
// An iterator buffers what the test writes until it is read; stdin closing (the test died) ends it.
const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const nextLine = async () => {
  const { value, done } = await stdinLines.next();
  if (done) throw new Error('stdin closed before the test said STOPPED');
  return value;
};
const log = m => console.error(`[console_test] ${m}`);
const check = (cond, what) => { if (!cond) throw new Error(what); };
const css = s => JSON.stringify(s); // a quoted CSS attribute value

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const problems = [];
page.on('pageerror', e => problems.push(`page error: ${e}`));
// Chromium logs every HTTP error as a console error: a server without /api/history or /api/fleet answers 404,
// which the page expects (it then charts from /metrics alone, and says the fleet is not compared).
const expected = m => /status of 404/.test(m.text()) && /\/api\/(history|fleet)$/.test(m.location().url);
page.on('console', m => { if (m.type() === 'error' && !expected(m)) problems.push(`console error: ${m.text()} (${m.location().url})`); });
// The page must not load anything from elsewhere (no CDN, nothing at run time but its own server).
page.on('request', r => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) problems.push(`foreign request: ${r.url()}`); });
page.on('dialog', d => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });

const row = `#brokers-table tbody[data-cluster=${css(cluster)}] tr[data-addr=${css(brokerAddr)}]`;
try {
  // ---- phase 1: the page, the broker, a topic's route ----
  const resp = await page.goto(base + '/');
  check(resp.ok(), `GET / answered ${resp.status()}`);
  check((resp.headers()['content-type'] || '').startsWith('text/html'), `GET / content type ${resp.headers()['content-type']}`);
  check(await page.title() === 'namesrv console', `title ${await page.title()}`);

  await page.waitForSelector(row, WAIT);
  const cells = await page.$eval(row, tr => ({
    name: tr.querySelector('th').textContent, id: tr.dataset.brokerId,
    idCell: tr.querySelector('[data-col=id]').textContent, addr: tr.querySelector('[data-col=addr]').textContent,
    text: tr.textContent,
  }));
  log(`brokers table row: ${cells.text}`);
  check(cells.name === brokerName, `broker name cell ${cells.name}`);
  check(cells.id === '0' && cells.idCell === '0', `broker id ${cells.id}/${cells.idCell}`);
  check(cells.addr === brokerAddr, `address cell ${cells.addr}`);
  check(cells.text.includes('live') && !cells.text.includes('not live'), `broker not shown live: ${cells.text}`);

  // The replayed feed has the registration, and the stream is live.
  await page.waitForSelector(`#feed-list li[data-type=brokerRegistered][data-addr=${css(brokerAddr)}]`, WAIT);
  await page.waitForSelector('#feed-status[data-state=live]', WAIT);

  // Search with the keyboard: type and press Enter in the labelled field (the form submits).
  await page.getByLabel('Topic name contains').fill(topic);
  await page.getByLabel('Topic name contains').press('Enter');
  const queues = `#route[data-topic=${css(topic)}] [data-testid=route-queues] tr[data-broker-name=${css(brokerName)}]`;
  await page.waitForSelector(queues, WAIT);
  const shown = await page.$eval(queues, tr => ({
    read: Number(tr.querySelector('[data-col=read]').textContent), write: Number(tr.querySelector('[data-col=write]').textContent),
  }));
  // What the page shows is what clients receive: compare with /routes itself.
  const route = await (await fetch(`${base}/routes/${encodeURIComponent(topic)}`)).json();
  const qd = route.queueDatas.find(q => q.brokerName === brokerName);
  check(qd, `/routes/${topic} has no queueData for ${brokerName}: ${JSON.stringify(route)}`);
  check(shown.read === qd.readQueueNums && shown.write === qd.writeQueueNums && shown.read > 0,
    `queues shown ${JSON.stringify(shown)}, route says ${JSON.stringify(qd)}`);
  const addrs = await page.$eval(`#route [data-testid=route-brokers] tr[data-broker-name=${css(brokerName)}]`, tr => tr.textContent);
  check(addrs.includes(`0 → ${brokerAddr}`), `route brokers row: ${addrs}`);
  log(`route of ${topic}: ${shown.read} read / ${shown.write} write queues on ${brokerName}`);

  // The request chart has data once two scrapes of /metrics are in.
  await page.waitForFunction(() => /requests\/s/.test(document.getElementById('qps-text').textContent), null, WAIT);
  // The configuration and KV sections are filled in (the KV store is empty here: the page says so).
  await page.waitForFunction(() => [...document.querySelectorAll('#config-table tbody th')].some(th => th.textContent === 'listenPort'), null, WAIT);
  await page.waitForFunction(() => document.getElementById('kv-body').textContent !== '', null, WAIT);

  // A few accessibility invariants that markup changes could silently break.
  const a11y = await page.evaluate(() => ({
    unscoped: document.querySelectorAll('th:not([scope])').length,
    unlabelled: [...document.querySelectorAll('input')].filter(i => !i.labels || !i.labels.length).length,
    landmarks: ['header', 'nav', 'main'].every(t => document.querySelector(t)),
    live: document.getElementById('feed-list').getAttribute('aria-live'),
  }));
  check(a11y.unscoped === 0 && a11y.unlabelled === 0 && a11y.landmarks && a11y.live === 'polite', `accessibility: ${JSON.stringify(a11y)}`);

  await page.screenshot({ path: join(artifacts, 'console-top.png') });
  await page.locator('#route').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'console-route.png') });
  await page.screenshot({ path: join(artifacts, 'console-full-before.png'), fullPage: true });
  check(problems.length === 0, problems.join('\n'));
  console.log('READY');

  // ---- phase 2: the broker is stopped; the feed shows it leave and the table drops it ----
  const said = await nextLine();
  check(said.trim() === 'STOPPED', `expected STOPPED, got ${said}`);
  const removed = `#feed-list li[data-type=brokerRemoved][data-addr=${css(brokerAddr)}]`;
  await page.waitForSelector(removed, WAIT);
  const ev = await page.$eval(removed, li => ({ cause: li.dataset.cause, text: li.textContent }));
  log(`feed: ${ev.text}`);
  // SIGKILL closes the broker's connections: the server learns of it from the close, not from a timeout.
  check(ev.cause === 'connection_closed', `brokerRemoved cause ${ev.cause}`);
  await page.waitForFunction(sel => !document.querySelector(sel), row, WAIT);
  await page.locator('#feed').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'console-feed.png') });
  await page.screenshot({ path: join(artifacts, 'console-full-after.png'), fullPage: true });
  check(problems.length === 0, problems.join('\n'));
  console.log('OK');
  await browser.close();
  process.exit(0);
} catch (e) {
  console.error(`FAIL ${e && e.stack || e}`);
  if (problems.length) console.error(problems.join('\n'));
  await page.screenshot({ path: join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
  await browser.close().catch(() => {});
  process.exit(1);
}
