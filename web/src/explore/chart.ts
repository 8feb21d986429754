/** The drift chart: graphsvc's estimate beside the provider's count, per step, as SVG. */

import type { DriftStep } from "./types";

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    element.setAttribute(name, String(value));
  }
  if (text !== undefined) {
    element.textContent = text;
  }
  return element;
}

/** A round axis maximum at or above `value`. */
function niceMax(value: number): number {
  if (value <= 0) {
    return 1;
  }
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * magnitude >= value) {
      return step * magnitude;
    }
  }
  return 10 * magnitude;
}

/** Grouped bars per step: estimated (blue) and reported (orange, absent when unreported). */
export function driftChart(steps: DriftStep[], titleId: string): SVGSVGElement {
  const width = 640;
  const height = 260;
  const left = 56;
  const right = 12;
  const top = 16;
  const bottom = 40;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const peak = Math.max(1, ...steps.map((s) => Math.max(s.estTokens ?? 0, s.reportedTokens ?? 0)));
  const yMax = niceMax(peak);
  const y = (value: number): number => top + plotHeight - (value / yMax) * plotHeight;

  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "drift-chart",
    role: "img",
    "aria-labelledby": titleId,
  });
  chart.appendChild(svg("title", { id: titleId }, "Estimated and reported prompt tokens per step"));

  for (let i = 0; i <= 4; i += 1) {
    const value = (yMax / 4) * i;
    chart.appendChild(svg("line", { x1: left, x2: width - right, y1: y(value), y2: y(value), class: "grid" }));
    chart.appendChild(
      svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end", class: "tick" }, String(Math.round(value))),
    );
  }

  const slot = plotWidth / Math.max(1, steps.length);
  const bar = Math.max(4, Math.min(28, slot * 0.35));
  steps.forEach((step, index) => {
    const centre = left + slot * index + slot / 2;
    const est = step.estTokens ?? 0;
    chart.appendChild(
      svg("rect", { x: centre - bar, y: y(est), width: bar, height: y(0) - y(est), class: "est" }),
    );
    if (step.reportedTokens !== null) {
      const reported = step.reportedTokens;
      chart.appendChild(
        svg("rect", { x: centre, y: y(reported), width: bar, height: y(0) - y(reported), class: "reported" }),
      );
    } else {
      chart.appendChild(svg("text", { x: centre + bar / 2, y: y(0) - 4, "text-anchor": "middle", class: "missing" }, "n/r"));
    }
    chart.appendChild(
      svg("text", { x: centre, y: height - bottom + 16, "text-anchor": "middle", class: "tick" }, String(step.step)),
    );
  });
  chart.appendChild(svg("text", { x: left + plotWidth / 2, y: height - 6, "text-anchor": "middle", class: "axis" }, "step"));
  chart.appendChild(svg("line", { x1: left, x2: width - right, y1: y(0), y2: y(0), class: "axis-line" }));
  return chart;
}
