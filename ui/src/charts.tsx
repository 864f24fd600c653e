/**
 * Charts (uPlot): bars over categories (difficulties, components), a histogram, and lines over episode
 * order. uPlot draws on a canvas, so each chart also carries a text summary for screen readers.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** A chart: uPlot options without the size, and its data. */
export interface ChartSpec {
  options: Omit<uPlot.Options, "width" | "height">;
  data: uPlot.AlignedData;
}

const HEIGHT = 200;

/** One chart in a figure with a caption; it follows its container's width. */
export function Chart({ title, summary, spec }: { title: string; summary: string; spec: ChartSpec }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const plot = new uPlot({ ...spec.options, width: Math.max(200, el.clientWidth), height: HEIGHT } as uPlot.Options, spec.data, el);
    const resize = new ResizeObserver(() => {
      const width = Math.max(200, el.clientWidth);
      if (width !== plot.width) plot.setSize({ width, height: HEIGHT });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [spec]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div class="chart-canvas" ref={host} role="img" aria-label={summary} />
    </figure>
  );
}

/** Colours of difficulties; anything else takes the next of the spare ones. */
const DIFFICULTY_COLORS: Record<string, string> = { all: "#2563eb", easy: "#16a34a", medium: "#d97706", hard: "#dc2626" };
const SPARE_COLORS = ["#7c3aed", "#0891b2", "#be185d", "#4d7c0f", "#92400e"];

/** A stable colour for each of `names`. */
export function colorsOf(names: readonly string[]): Record<string, string> {
  let spare = 0;
  return Object.fromEntries(names.map((n) => [n, DIFFICULTY_COLORS[n] ?? SPARE_COLORS[spare++ % SPARE_COLORS.length]]));
}

/** One bar series over categories: later series are drawn narrower, inside the earlier ones. */
export interface BarSeries {
  label: string;
  values: Array<number | null>;
  color: string;
  /** Share of a category's width (0..1). */
  width: number;
}

const bars = (width: number) => uPlot.paths.bars?.({ size: [width, 80], align: 0 });

const axisStyle = { stroke: "#374151", grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d1d5db", width: 1 } };

/** A y range that includes 0 and pads the data a little. */
const rangeWithZero: uPlot.Range.Function = (_u, min, max) => {
  const lo = Math.min(0, min ?? 0);
  const hi = Math.max(0, max ?? 0);
  const pad = (hi - lo || 1) * 0.1;
  return [lo < 0 ? lo - pad : 0, hi > 0 ? hi + pad : 0];
};

/** Bars over named categories; `unitRange` fixes y to [0, 1] (rates). */
export function categoryBars(categories: readonly string[], series: readonly BarSeries[], unitRange: boolean): ChartSpec {
  const xs = categories.map((_c, i) => i);
  return {
    options: {
      scales: { x: { time: false, range: [-0.5, categories.length - 0.5] }, y: unitRange ? { range: [0, 1] } : { range: rangeWithZero } },
      axes: [
        { ...axisStyle, splits: () => xs, values: (_u, splits) => splits.map((i) => categories[i] ?? ""), grid: { show: false } },
        { ...axisStyle, size: 50 },
      ],
      legend: { show: series.length > 1, live: false },
      cursor: { drag: { x: false, y: false } },
      series: [{ label: "category", value: (_u, i) => (i === null ? "" : (categories[i] ?? "")) }, ...series.map((s) => ({ label: s.label, stroke: s.color, fill: `${s.color}cc`, width: 0, paths: bars(s.width), points: { show: false } }))],
    },
    data: [xs, ...series.map((s) => s.values)] as uPlot.AlignedData,
  };
}

/** Bars over integer x values (a histogram). */
export function histogram(xs: readonly number[], series: readonly BarSeries[], xLabel: string): ChartSpec {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return {
    options: {
      scales: { x: { time: false, range: [lo - 0.5, hi + 0.5] }, y: { range: rangeWithZero } },
      axes: [{ ...axisStyle, label: xLabel, labelSize: 20, grid: { show: false }, incrs: [1, 2, 5, 10, 20, 50, 100] }, { ...axisStyle, size: 40, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }],
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      series: [{ label: xLabel }, ...series.map((s) => ({ label: s.label, stroke: s.color, fill: `${s.color}cc`, width: 0, paths: bars(s.width), points: { show: false } }))],
    },
    data: [xs as number[], ...series.map((s) => s.values)] as uPlot.AlignedData,
  };
}

/** Lines over an x axis, gaps bridged (each line is sparse where the other categories' points are). */
export function lines(xs: readonly number[], series: ReadonlyArray<{ label: string; values: Array<number | null>; color: string }>, xLabel: string): ChartSpec {
  return {
    options: {
      scales: { x: { time: false }, y: { range: [0, 1] } },
      axes: [{ ...axisStyle, label: xLabel, labelSize: 20 }, { ...axisStyle, size: 50 }],
      legend: { show: true, live: false },
      series: [{ label: xLabel }, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: true, points: { show: false } }))],
    },
    data: [xs as number[], ...series.map((s) => s.values)] as uPlot.AlignedData,
  };
}
