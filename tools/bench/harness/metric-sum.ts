/**
 * Reads one counter from a service's Prometheus `/metrics`, summed over the series whose labels
 * contain `having` (e.g. `outcome="ok"`): how the fleet bench counts the loads and unloads of
 * whichever service manages residency, without a Prometheus server.
 */
export async function metricSum(port: number, name: string, having = ""): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new Error(`metrics on port ${port}: HTTP ${res.status}`);
  let sum = 0;
  for (const line of (await res.text()).split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labels = line.slice(name.length, line.lastIndexOf(" "));
    if (!labels.includes(having)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
  }
  return sum;
}
