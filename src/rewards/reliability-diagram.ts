/**
 * Drawings of a calibration report's reliability diagram: predicted (mean score per bin) against
 * observed (success rate per bin), with the diagonal of perfect calibration. Both are deterministic.
 * The PNG is encoded with pngjs (pure JS, no native build, Node >= 14) from a plain RGBA buffer; it
 * carries no text, only axes with ticks every 0.1, so no font is needed.
 */
import pngjs from "pngjs";
import { ValidationError } from "../core/errors.js";
import type { CalibrationReport } from "./calibration.js";

const { PNG } = pngjs;

/** Renders the reliability diagram as plain ASCII text; `width` is the plot's width in columns (10..200). */
export function reliabilityDiagramText(report: CalibrationReport, width = 40): string {
  if (!Number.isInteger(width) || width < 10 || width > 200) {
    throw new ValidationError("invalid_argument", `width must be an integer in [10, 200], got ${String(width)}`, { field: "width" });
  }
  // Terminal cells are about twice as tall as wide, so half as many rows keeps the diagonal near 45°.
  const rows = Math.floor(width / 2) + 1;
  const grid = Array.from({ length: rows }, () => Array<string>(width).fill(" "));
  const col = (x: number) => Math.round(x * (width - 1));
  const row = (y: number) => Math.round((1 - y) * (rows - 1));
  for (let c = 0; c < width; c += 1) grid[row(c / (width - 1))][c] = ".";
  for (const b of report.bins) {
    if (b.count > 0) grid[row(b.success_rate!)][col(b.mean_score!)] = "o";
  }

  const yLabel = (r: number) => (r === 0 ? " 1.0" : r === rows - 1 ? " 0.0" : r === Math.round((rows - 1) / 2) ? " 0.5" : "    ");
  const xLabels = Array<string>(width + 3).fill(" ");
  for (const [x, text] of [[0, "0.0"], [0.5, "0.5"], [1, "1.0"]] as const) {
    const start = Math.min(width, Math.max(0, col(x) - 1));
    for (let k = 0; k < text.length; k += 1) xLabels[start + k] = text[k];
  }

  const decimals = report.bins.length <= 10 ? 1 : report.bins.length <= 100 ? 2 : 3;
  const binLabel = (lo: number, hi: number, last: boolean) => `[${lo.toFixed(decimals)},${hi.toFixed(decimals)}${last ? "]" : ")"}`;
  const labelWidth = binLabel(0, 1, true).length;
  const num = (v: number | null) => (v === null ? "-" : v.toFixed(3)).padStart(9);
  const table = report.bins.map((b, k) => {
    const gap = b.count === 0 ? "-" : `${b.success_rate! - b.mean_score! >= 0 ? "+" : ""}${(b.success_rate! - b.mean_score!).toFixed(3)}`;
    return `${binLabel(b.lo, b.hi, k === report.bins.length - 1).padEnd(labelWidth)}  ${String(b.count).padStart(6)}  ${num(b.mean_score)}  ${num(b.success_rate)}  ${gap.padStart(7)}`;
  });

  return [
    `reliability diagram  n=${report.n}  ECE=${report.ece.toFixed(3)}  (o = bin: mean score vs success rate; . = perfect calibration)`,
    ...grid.map((cells, r) => `${yLabel(r)} |${cells.join("")}`.trimEnd()),
    `     +${"-".repeat(width)}`,
    `      ${xLabels.join("").trimEnd()}  predicted`,
    `${"bin".padEnd(labelWidth)}  ${"count".padStart(6)}  ${"predicted".padStart(9)}  ${"observed".padStart(9)}  ${"gap".padStart(7)}`,
    ...table,
  ].join("\n");
}

/** Pixel geometry of the PNG: the plot is the square [left, left+size] x [top, top+size], y pointing up. */
export const PNG_LAYOUT = { width: 480, height: 480, left: 60, top: 20, size: 400, countsTop: 432, countsHeight: 40 } as const;

/** Colours of the PNG (RGB). */
export const PNG_COLOURS = {
  background: [255, 255, 255],
  grid: [232, 232, 232],
  axis: [0, 0, 0],
  bar: [31, 119, 180],
  gap: [255, 127, 14],
  diagonal: [214, 39, 40],
  point: [0, 0, 0],
  counts: [150, 150, 150],
} as const satisfies Record<string, readonly [number, number, number]>;

type Rgb = readonly [number, number, number];

/**
 * Renders the reliability diagram as a 480x480 PNG: blue bars are each bin's success rate over the bin's
 * score range, black points sit at (mean score, success rate), orange lines are the gaps to the red
 * diagonal, and the grey strip below the plot shows the bin counts.
 */
export function reliabilityDiagramPng(report: CalibrationReport): Buffer {
  const { width, height, left, top, size, countsTop, countsHeight } = PNG_LAYOUT;
  const png = new PNG({ width, height });
  const set = (x: number, y: number, [r, g, b]: Rgb) => {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const at = (y * width + x) * 4;
    png.data[at] = r;
    png.data[at + 1] = g;
    png.data[at + 2] = b;
    png.data[at + 3] = 255;
  };
  const fill = (x0: number, y0: number, x1: number, y1: number, colour: Rgb) => {
    for (let y = Math.min(y0, y1); y <= Math.max(y0, y1); y += 1) {
      for (let x = Math.min(x0, x1); x <= Math.max(x0, x1); x += 1) set(x, y, colour);
    }
  };
  const px = (x: number) => left + Math.round(x * size);
  const py = (y: number) => top + size - Math.round(y * size);
  const bottom = py(0);

  fill(0, 0, width - 1, height - 1, PNG_COLOURS.background);
  for (let k = 1; k < 10; k += 1) {
    fill(px(k / 10), top, px(k / 10), bottom, PNG_COLOURS.grid);
    fill(left, py(k / 10), px(1), py(k / 10), PNG_COLOURS.grid);
  }

  const maxCount = Math.max(...report.bins.map((b) => b.count));
  for (const b of report.bins) {
    if (b.count === 0) continue;
    // A zero success rate still shows as a one-pixel sliver, so a populated bin is visible.
    fill(px(b.lo) + 1, Math.min(py(b.success_rate!), bottom - 1), px(b.hi) - 1, bottom - 1, PNG_COLOURS.bar);
    const h = Math.max(1, Math.round((b.count / maxCount) * countsHeight));
    fill(px(b.lo) + 1, countsTop + countsHeight - h, px(b.hi) - 1, countsTop + countsHeight - 1, PNG_COLOURS.counts);
  }
  for (const b of report.bins) {
    if (b.count > 0) fill(px(b.mean_score!), py(b.success_rate!), px(b.mean_score!), py(b.mean_score!), PNG_COLOURS.gap);
  }

  fill(left, top, left, bottom, PNG_COLOURS.axis);
  fill(left, bottom, px(1), bottom, PNG_COLOURS.axis);
  fill(left, countsTop + countsHeight, px(1), countsTop + countsHeight, PNG_COLOURS.axis);
  for (let k = 0; k <= 10; k += 1) {
    const long = k % 5 === 0 ? 8 : 4;
    fill(px(k / 10), bottom + 1, px(k / 10), bottom + long, PNG_COLOURS.axis);
    fill(left - long, py(k / 10), left - 1, py(k / 10), PNG_COLOURS.axis);
  }

  // Two pixels thick so it stays visible over the bars.
  for (let i = 0; i <= size; i += 1) {
    set(left + i, bottom - i, PNG_COLOURS.diagonal);
    set(left + i, bottom - i - 1, PNG_COLOURS.diagonal);
  }
  for (const b of report.bins) {
    if (b.count > 0) fill(px(b.mean_score!) - 3, py(b.success_rate!) - 3, px(b.mean_score!) + 3, py(b.success_rate!) + 3, PNG_COLOURS.point);
  }
  return PNG.sync.write(png);
}
