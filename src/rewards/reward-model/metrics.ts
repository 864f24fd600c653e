/** The log loss a reward-model file reports about itself (its AUROC is calibration.ts's). */

/** Mean binary cross-entropy (natural log), probabilities clipped away from 0 and 1. */
export function logLoss(probabilities: ArrayLike<number>, labels: ArrayLike<number | boolean>): number {
  const n = probabilities.length;
  if (n === 0) return 0;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const p = Math.min(1 - 1e-12, Math.max(1e-12, probabilities[i]!));
    total -= labels[i] ? Math.log(p) : Math.log(1 - p);
  }
  return total / n;
}
