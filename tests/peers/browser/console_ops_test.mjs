// Drives the web console in Debian's chromium (headless) as an operator would, for the second test of
// tests/interop/console.rs (fake brokers registered over the wire by the Rust test, no JVM):
//
//   node console_ops_test.mjs BASE_URL FULL_FEED_BASE_URL ARTIFACT_DIR
//
// Talks to the Rust test in lines (stdout: what the page showed; stdin: what the test did). Every wait is for a
// condition with a deadline, never a delay. Any failure exits 1 with the reason on stderr and `ops-failure.png`.
//   1. Topics (1440×900): counts, natural order, paging, kind and broker filters, search as you type, a link
//      #topic=NAME opened in a fresh page. Prints TOPICS.
//   2. Health: the test closes group ops-a1's master connection and writes CLOSED; the verdict must show within a
//      second, the group's rows and a route of it badged. Prints HEALTH.
//   3. Phone (390×844): no horizontal overflow, the broker table as cards. Charts: /api/history after a reload
//      when the server has it, live points when not. Prints PHONE.
//   4. Offline: the test kills the server and writes KILLED; the page must grey and claim nothing live. Prints
//      GREY. The test restarts it on the same port and writes RESTARTED; every error must go. Prints RECOVERED.
//   5. A server whose event streams are all taken (FULL_FEED_BASE_URL): the page shows the server's reason.
//      Prints OK and exits 0.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [base, fullBase, artifacts] = process.argv.slice(2);
if (!artifacts) {
  console.error('usage: console_ops_test.mjs BASE_URL FULL_FEED_BASE_URL ARTIFACT_DIR');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const WAIT = { timeout: 30_000 };
const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const expectLine = async want => {
  const { value, done } = await stdinLines.next();
  if (done) throw new Error(`stdin closed before the test said ${want}`);
  if (value.trim() !== want) throw new Error(`expected ${want}, got ${value}`);
};
const log = m => console.error(`[console_ops_test] ${m}`);
const check = (cond, what) => { if (!cond) throw new Error(what); };
const css = s => JSON.stringify(s);
const shot = (p, name, full) => p.screenshot({ path: join(artifacts, name), fullPage: !!full });

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const problems = [];
// A failed fetch while the server is down is expected to show in the console as a network error; anything else
// the page logs as an error, or throws, is a problem.
let serverDown = false;
// Chromium logs every HTTP error as a console error; these are answers the page expects and handles.
const expected = m => (/status of 404/.test(m.text()) && /\/api\/(history|fleet)$/.test(m.location().url)) ||
  (/status of 503/.test(m.text()) && /\/events(\?|$)/.test(m.location().url)) ||
  /EventSource's response has a MIME type/.test(m.text()); // the same refusal, as EventSource reports it
async function newPage(viewport, url) {
  const page = await browser.newPage({ viewport });
  page.on('pageerror', e => problems.push(`page error: ${e}`));
  page.on('console', m => {
    if (m.type() === 'error' && !expected(m) && !(serverDown && /ERR_CONNECTION_REFUSED|Failed to fetch|net::/.test(m.text())))
      problems.push(`console error: ${m.text()} (${m.location().url})`);
  });
  page.on('request', r => { if (!r.url().startsWith(base) && !r.url().startsWith(fullBase) && !r.url().startsWith('data:')) problems.push(`foreign request: ${r.url()}`); });
  const resp = await page.goto(url);
  check(resp.ok(), `GET ${url} answered ${resp.status()}`);
  return page;
}
const topicsShown = p => p.$$eval('#topic-list a', as => as.map(a => a.textContent));
const topicCount = p => p.$eval('#topic-count', e => e.textContent);

let page = await newPage({ width: 1440, height: 900 }, base + '/');
try {
  // ---- 1. topics ----
  await page.waitForSelector('#brokers-table tr[data-broker-name="ops-a1"][data-broker-id="0"]', WAIT);
  await page.waitForFunction(() => document.querySelectorAll('#topic-list a').length === 100, null, WAIT);
  let names = await topicsShown(page);
  const ops = names.filter(n => n.startsWith('Ops_'));
  check(ops.slice(0, 4).join() === 'Ops_0,Ops_1,Ops_2,Ops_3', `first page, natural order: ${names.slice(0, 12)}`);
  const total = (await (await fetch(base + '/api/topics')).json()).total;
  const pager = await page.$eval('#topic-page', e => e.textContent);
  check(pager === `1–100 of ${total}`, `pager: ${pager}, ${total} topics`);
  await page.getByRole('button', { name: 'Next ›' }).click();
  await page.waitForFunction(() => document.getElementById('topic-page').textContent.startsWith('101–200'), null, WAIT);
  names = await topicsShown(page);
  check(names.includes('Ops_100') && !names.includes('Ops_10'), `second page: ${names.slice(0, 8)}`);
  await page.getByRole('button', { name: '‹ Previous' }).click();
  await page.waitForFunction(() => document.getElementById('topic-page').textContent.startsWith('1–100'), null, WAIT);

  await page.getByLabel('Kind').selectOption('retry');
  await page.waitForFunction(() => [...document.querySelectorAll('#topic-list a')].map(a => a.textContent).join() === '%RETRY%ops-group', null, WAIT);
  await page.getByLabel('Kind').selectOption('dlq');
  await page.waitForFunction(() => [...document.querySelectorAll('#topic-list a')].map(a => a.textContent).join() === '%DLQ%ops-group', null, WAIT);
  await page.getByLabel('Kind').selectOption('');
  await page.getByLabel('Cluster or broker').selectOption('broker:ops-b1');
  await page.waitForFunction(() => [...document.querySelectorAll('#topic-list a')].every(a => a.textContent.startsWith('Bee_') || a.textContent.startsWith('ops-') || a.textContent.startsWith('OpsB')), null, WAIT);
  await page.getByLabel('Cluster or broker').selectOption('');

  // Search as you type: no Enter, the list follows the field.
  await page.getByLabel('Topic name contains').pressSequentially('ops_64');
  await page.waitForFunction(() => /^11 of \d+ topics match/.test(document.getElementById('topic-count').textContent), null, WAIT);
  names = await topicsShown(page);
  check(names.join() === ['Ops_64', ...Array.from({ length: 10 }, (_, i) => `Ops_${640 + i}`)].join(), `search as you type: ${names}`);
  log(`search: ${await topicCount(page)}`);
  // Keyboard: focus the first result and press Enter: its route opens and the address can be shared.
  await page.focus('#topic-list a[data-topic="Ops_64"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#route[data-topic="Ops_64"] [data-testid=route-queues] tr[data-broker-name="ops-a1"]', WAIT);
  check(new URL(page.url()).hash === '#topic=Ops_64', `hash after opening: ${page.url()}`);
  await shot(page, 'ops-topics.png');

  // The link in a fresh page: the route shows without touching anything.
  const shared = await newPage({ width: 1440, height: 900 }, base + '/#topic=' + encodeURIComponent('%RETRY%ops-group'));
  await shared.waitForSelector(`#route[data-topic=${css('%RETRY%ops-group')}] [data-testid=route-queues] tr`, WAIT);
  await shot(shared, 'ops-shared-link.png');
  await shared.close();
  // The count is live: a topic registered now shows without a reload.
  await page.getByLabel('Topic name contains').fill('');
  await page.waitForFunction(t => document.getElementById('topic-count').textContent.startsWith(t + ' topics'), String(total), WAIT);
  const before = await topicCount(page);
  console.log('TOPICS');
  await expectLine('ADDED');
  await page.waitForFunction(t => document.getElementById('topic-count').textContent.startsWith(t + ' topics'), String(total + 1), WAIT);
  log(`count before ${before}; after ${await topicCount(page)}`);
  check(/\bOps_Late\b/.test(await (await fetch(base + '/api/topics?q=Ops_Late')).text()), 'the added topic is served');

  // ---- 2. health ----
  await page.waitForSelector('#health-status[data-status]', WAIT);
  check(!(await page.$('#health-list li[data-kind=no_master]')), 'a no_master verdict before any master left');
  await page.evaluate(() => { location.hash = '#topic=Ops_1'; });
  await page.waitForSelector('#route[data-topic="Ops_1"] [data-testid=route-brokers] tr[data-broker-name="ops-a1"]', WAIT);
  console.log('READY_HEALTH');
  await expectLine('CLOSED');
  const closedAt = Date.now();
  // Within a second of the master's connection closing (the line from the test comes after the close).
  await page.waitForSelector('#health-list li[data-kind=no_master][data-broker-name="ops-a1"]', { timeout: 1000 });
  const took = Date.now() - closedAt;
  const verdict = await page.$eval('#health-list li[data-kind=no_master]', li => ({ text: li.textContent, href: li.querySelector('a').getAttribute('href') }));
  log(`no_master verdict after ${took} ms: ${verdict.text} → ${verdict.href}`);
  check(verdict.href === '#group:OpsA/ops-a1', `verdict link ${verdict.href}`);
  await page.waitForSelector('#brokers-table tr[data-broker-name="ops-a1"] .vbadge[data-badge=no_master]', WAIT);
  await page.waitForSelector('#route [data-testid=route-brokers] tr[data-broker-name="ops-a1"] .vbadge[data-badge=no_master]', WAIT);
  // The verdict's link leads to the group's row.
  await page.click('#health-list li[data-kind=no_master] a');
  await page.waitForFunction(() => location.hash === '#group:OpsA/ops-a1', null, WAIT);
  check(await page.$eval('[id="group:OpsA/ops-a1"]', e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }), 'the group row is not in view');
  await shot(page, 'ops-health.png');
  console.log('HEALTH');

  // ---- 3. phone; charts ----
  const phone = await newPage({ width: 390, height: 844 }, base + '/');
  await phone.waitForSelector('#brokers-table tr[data-broker-name="ops-a2"]', WAIT);
  await phone.waitForFunction(() => document.querySelectorAll('#topic-list a').length > 0, null, WAIT);
  const fit = await phone.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, inner: innerWidth,
    table: document.getElementById('brokers-table').getBoundingClientRect().width,
    wide: [...document.querySelectorAll('body *')].filter(e => {
      const r = e.getBoundingClientRect();
      // Inside a scroll box (the route tables, raw JSON) is allowed to be wider: it scrolls on its own.
      return r.right > innerWidth + 1 && !e.closest('.scroll, pre, .skip, svg');
    }).map(e => e.tagName + '#' + e.id + '.' + e.className).slice(0, 5),
    sticky: getComputedStyle(document.querySelector('nav.tabs')).position,
  }));
  log(`phone: ${JSON.stringify(fit)}`);
  check(fit.scroll <= fit.inner, `the page is ${fit.scroll} px wide on a ${fit.inner} px screen`);
  check(fit.table <= fit.inner, `the broker table is ${fit.table} px wide on a ${fit.inner} px screen`);
  check(fit.wide.length === 0, `elements wider than the screen: ${fit.wide}`);
  check(fit.sticky === 'sticky', `navigation position ${fit.sticky}`);
  await shot(phone, 'ops-phone.png');
  await shot(phone, 'ops-phone-full.png', true);
  await phone.close();

  const history = await fetch(base + '/api/history');
  if (history.status === 404) {
    // A server without history: the charts fill from /metrics as before.
    await page.waitForFunction(() => /requests\/s/.test(document.getElementById('qps-text').textContent), null, WAIT);
    log('no /api/history on this server: charts from /metrics only');
  } else {
    check(history.ok, `/api/history answered ${history.status}`);
    // Once the server has kept a point, a reload shows it at once.
    const deadline = Date.now() + 60_000;
    while (!((await (await fetch(base + '/api/history')).json()).series.requests || []).length) {
      check(Date.now() < deadline, 'no point in /api/history within 60 s');
      await page.waitForTimeout(500); // polling the server's own history, whose step is seconds long
    }
    await page.reload();
    await page.waitForFunction(() => Number(document.getElementById('qps-chart').dataset.historyPoints) > 0, null, WAIT);
    log('charts show the server\'s history after a reload');
  }
  // Values on hover.
  await page.waitForFunction(() => Number(document.getElementById('qps-chart').dataset.points) > 0, null, WAIT);
  await page.locator('#qps-chart').scrollIntoViewIfNeeded();
  await page.hover('#qps-chart', { position: { x: 300, y: 80 } });
  await page.waitForFunction(() => /^\d\d:\d\d:\d\d.*requests\/s$/.test(document.getElementById('qps-read').textContent), null, WAIT);
  log(`readout: ${await page.$eval('#qps-read', e => e.textContent)}`);
  await shot(page, 'ops-charts.png');
  // From here until the page has recovered the server may be down: its requests fail, as they should.
  serverDown = true;
  console.log('PHONE');

  // ---- 4. offline and back ----
  await expectLine('KILLED');
  await page.waitForSelector('body[data-offline] #conn[data-state=error]', WAIT);
  await page.getByLabel('Topic name contains').fill('ops_1');
  await page.waitForFunction(() => /^Search failed/.test(document.getElementById('topic-count').textContent), null, WAIT);
  const grey = await page.evaluate(() => ({
    ready: document.getElementById('ov-ready').textContent,
    live: [...document.querySelectorAll('#brokers-table td')].filter(td => /✔/.test(td.textContent)).length,
    ages: [...document.querySelectorAll('#brokers-table td[data-col=age]')].map(td => td.textContent),
    health: document.getElementById('health-status').textContent,
    opacity: getComputedStyle(document.querySelector('main')).opacity,
  }));
  log(`offline: ${JSON.stringify(grey)}`);
  check(!grey.ready.includes('✔') && grey.ready.includes('unknown'), `state while offline: ${grey.ready}`);
  check(grey.live === 0, `${grey.live} cells still tick while offline`);
  check(grey.ages.length > 0 && grey.ages.every(a => a.startsWith('?')), `heartbeat ages while offline: ${grey.ages}`);
  check(grey.health.includes('unknown'), `health while offline: ${grey.health}`);
  check(Number(grey.opacity) < 1, `main not greyed: opacity ${grey.opacity}`);
  await shot(page, 'ops-offline.png');
  console.log('GREY');
  await expectLine('RESTARTED');
  await page.waitForSelector('body:not([data-offline]) #conn[data-state=ok]', WAIT);
  await page.waitForFunction(() => !/failed/i.test(document.getElementById('topic-count').textContent) &&
    /match/.test(document.getElementById('topic-count').textContent), null, WAIT);
  await page.waitForSelector('#ov-ready[data-ready=true]', WAIT);
  await page.waitForSelector('#feed-status[data-state=live]', WAIT);
  await page.waitForSelector('#brokers-table td[data-col=state].ok', WAIT);
  const errors = await page.evaluate(() => [...document.querySelectorAll('.bad')].filter(e => e.offsetParent && e.id !== 'conn' &&
    !e.closest('#feed-list')).map(e => e.textContent));
  check(errors.length === 0, `errors still shown after the server came back: ${errors}`);
  await shot(page, 'ops-recovered.png');
  serverDown = false;
  console.log('RECOVERED');

  // ---- 5. a full feed says why ----
  const full = await newPage({ width: 1440, height: 900 }, fullBase + '/');
  await full.waitForFunction(() => /eventFeedStreams=1/.test(document.getElementById('feed-status').textContent), null, WAIT);
  log(`full feed: ${await full.$eval('#feed-status', e => e.textContent)}`);
  await shot(full, 'ops-feed-full.png');

  // ---- 6. the fleet view: that server lists ours in namesrvPeers and holds a KV entry ours has not ----
  await full.waitForFunction(() => [...document.querySelectorAll('#fleet-body [data-peer] tr[data-aspect=kv]')]
    .some(r => r.textContent.includes('ops-ns/only-on-the-second')), null, WAIT);
  await full.waitForFunction(() => [...document.querySelectorAll('#health-list li, #health-body li, [data-kind=fleet_drift]')]
    .some(e => /fleet/.test(e.textContent)) || /of the fleet differs/.test(document.body.textContent), null, WAIT);
  log(`fleet: ${await full.$eval('#fleet-body', e => e.textContent.replace(/\s+/g, ' ').slice(0, 300))}`);
  await full.$eval('#fleet', e => e.scrollIntoView());
  await shot(full, 'ops-fleet.png');
  await full.close();
  check(problems.length === 0, problems.join('\n'));
  console.log('OK');
  await browser.close();
  process.exit(0);
} catch (e) {
  console.error(`FAIL ${e && e.stack || e}`);
  if (problems.length) console.error(problems.join('\n'));
  await page.screenshot({ path: join(artifacts, 'ops-failure.png'), fullPage: true }).catch(() => {});
  await browser.close().catch(() => {});
  process.exit(1);
}
