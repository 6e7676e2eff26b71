/**
 * Splits `total` whole units (accelerators) among items in proportion to `weights`
 * (popularity), at least one each, by largest remainder: how the fleet bench places a model's
 * replicas. Weights that already are whole units summing to `total` (a placement a bundle
 * records) come back unchanged: splitting only the spare units would pull them towards equal.
 */
export function apportion(weights: readonly number[], total: number): number[] {
  if (!Number.isInteger(total) || total < weights.length) {
    throw new RangeError(`apportion: ${total} units cannot give each of ${weights.length} one`);
  }
  if (weights.some((w) => !(w > 0) || !Number.isFinite(w))) {
    throw new RangeError("apportion: weights must be positive and finite");
  }
  if (weights.every(Number.isInteger) && weights.reduce((a, b) => a + b, 0) === total) {
    return [...weights];
  }
  const spare = total - weights.length;
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (w / sum) * spare);
  const shares = exact.map((x) => 1 + Math.floor(x));
  const byRemainder = exact
    .map((x, i) => [x - Math.floor(x), i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  let left = total - shares.reduce((a, b) => a + b, 0);
  for (const [, i] of byRemainder) {
    if (left <= 0) break;
    shares[i] = (shares[i] as number) + 1;
    left--;
  }
  return shares;
}
