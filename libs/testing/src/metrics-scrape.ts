/**
 * Scrapes `GET /metrics` on `port` as Prometheus does and returns every sample, keyed by its
 * name and labels exactly as the text format writes them (`name{a="x",b="y"}`).
 */
export async function scrapeMetrics(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`scrape of :${port} answered ${res.status}`);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}
