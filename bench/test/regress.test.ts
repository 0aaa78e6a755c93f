// The regression call-out of the bench (bench/src/regress.js, issue 48): a figure more than 10 %
// worse than the same row of an earlier run is named; better ones, small changes and rows only one
// run has are not.
import { describe, expect, it } from 'vitest'
import { compareRuns, formatRegressions, machineShift } from '../src/regress.js'

const fields = { higherIsBetter: ['ratio'], lowerIsBetter: ['cpuRatio'] }

describe('compareRuns', () => {
  it('names figures more than 10 % worse, in either direction of better', () => {
    const previous = {
      rows: [
        { id: 'a', ratio: 1.0, cpuRatio: 1.0 },
        { id: 'b', ratio: 0.95, cpuRatio: 1.1 },
        { id: 'gone', ratio: 1 },
      ],
    }
    const current = {
      rows: [
        { id: 'a', ratio: 0.85, cpuRatio: 1.05 },
        { id: 'b', ratio: 1.2, cpuRatio: 1.3 },
        { id: 'new', ratio: 0.1 },
      ],
    }
    const found = compareRuns(previous, current, fields)
    expect(found.map((r) => `${r.id} ${r.field}`)).toEqual(['a ratio', 'b cpuRatio'])
    expect(found[0]?.change).toBeCloseTo(-0.15)
    const lines = formatRegressions(found, 'last.json')
    expect(lines[0]).toContain('REGRESSION')
    expect(lines[1]).toContain('a: ratio 1.00 → 0.85 (-15 %)')
  })

  it('says so when nothing got worse, and tolerates a missing earlier run', () => {
    expect(compareRuns(undefined, { rows: [{ id: 'a', ratio: 1 }] }, fields)).toEqual([])
    expect(formatRegressions([], 'last.json')[0]).toContain('No row more than 10 % worse')
  })
})

describe('machineShift', () => {
  const previous = {
    rows: [
      { id: 'a', ratio: 1, baselineCpuUs: 60 },
      { id: 'b', ratio: 1, baselineCpuUs: 50 },
      { id: 'c', ratio: 1, baselineCpuUs: 40 },
      { id: 'ours-based', ratio: 1 },
    ],
  }

  it('is the median of the baselines now against then, over the rows both runs have', () => {
    const current = {
      rows: [
        { id: 'a', ratio: 0.7, baselineCpuUs: 120 },
        { id: 'b', ratio: 0.7, baselineCpuUs: 105 },
        { id: 'c', ratio: 0.7, baselineCpuUs: 40 },
        { id: 'ours-based', ratio: 0.7 },
        { id: 'new', ratio: 1, baselineCpuUs: 1000 },
      ],
    }
    const shift = machineShift(previous, current, 'baselineCpuUs')
    expect(shift).toEqual({ field: 'baselineCpuUs', label: 'baselineCpuUs', ratio: 2, rows: 3 })
    const lines = formatRegressions(compareRuns(previous, current, fields), 'last.json', false, shift)
    expect(lines[0]).toContain('The machine changed')
    expect(lines[0]).toContain('2.00×')
    expect(lines[1]).toContain('REGRESSION')
  })

  it('says nothing of the machine within 10 %, or when no row has the figure in both runs', () => {
    const steady = { rows: [{ id: 'a', ratio: 1, baselineCpuUs: 63 }] }
    const shift = machineShift(previous, steady, 'baselineCpuUs')
    expect(shift?.ratio).toBeCloseTo(1.05)
    expect(formatRegressions([], 'last.json', false, shift)).toEqual(['No row more than 10 % worse than the run in last.json.'])
    expect(machineShift(previous, { rows: [{ id: 'ours-based', ratio: 1 }] }, 'baselineCpuUs')).toBeUndefined()
    expect(machineShift(undefined, steady, 'baselineCpuUs')).toBeUndefined()
  })
})
