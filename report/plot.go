package report

// This file draws GPUs in use over virtual time, one panel per input and one
// line per policy: solid for the GPUs of running jobs, dashed (when it
// differs) for the GPUs held by any member, including idle members of
// incomplete gangs, and grey for the cluster's capacity. Below each, a panel
// of the jobs waiting (submitted and not started), one line per policy.
// Series are step
// functions; long ones are reduced to at most plotBuckets steps keeping the
// highest value of each bucket, so a whole-trace plot stays a few hundred
// kilobytes and no peak disappears.

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/phalanx-sched/phalanx/sim"
	"github.com/phalanx-sched/phalanx/workload"
)

// plotBuckets is the most steps a plotted series keeps.
const plotBuckets = 2000

// Panel size of the plot.
const (
	panelWidth  = 9 * vg.Inch
	panelHeight = 4 * vg.Inch
	pngDPI      = 144
)

// PlotFile draws the GPUs in use and the jobs waiting of every comparison,
// two panels each, into path, as SVG or PNG according to its extension (.svg, .png).
func PlotFile(path string, cs []Comparison) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("report: plot file %s: extension must be .svg or .png", path)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := Plot(f, ext[1:], cs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Plot draws the GPUs in use and the jobs waiting of every comparison, two
// panels each, stacked, and writes the figure to out in format "svg" or
// "png".
func Plot(out io.Writer, format string, cs []Comparison) error {
	if len(cs) == 0 {
		return fmt.Errorf("report: nothing to plot")
	}
	plots := make([][]*plot.Plot, 0, 2*len(cs))
	for _, c := range cs {
		p, err := panel(c)
		if err != nil {
			return err
		}
		wp, err := waitingPanel(c)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{p}, []*plot.Plot{wp})
	}
	height := panelHeight * vg.Length(len(plots))
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.New(panelWidth, height)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(panelWidth, height), vgimg.UseDPI(pngDPI))}
	default:
		return fmt.Errorf("report: unknown plot format %q (want svg or png)", format)
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	for i, row := range plot.Align(plots, tiles, dc) {
		plots[i][0].Draw(row[0])
	}
	if _, err := canvas.WriteTo(out); err != nil {
		return fmt.Errorf("report: writing %s plot: %w", format, err)
	}
	return nil
}

// timeUnit picks the unit of the x axis for a span of seconds.
func timeUnit(span int64) (name string, seconds float64) {
	switch {
	case span <= 20*60:
		return "seconds", 1
	case span <= 20*3600:
		return "minutes", 60
	default:
		return "hours", 3600
	}
}

// span returns the time axis of a comparison's panels: from 0 (or the first
// sample, if earlier) to the last sample of any series.
func span(c Comparison) (start, end int64) {
	first := true
	widen := func(lo, hi int64) {
		if first || lo < start {
			start = lo
		}
		if first || hi > end {
			end = hi
		}
		first = false
	}
	for _, r := range c.Results {
		if n := len(r.GPUs); n > 0 {
			widen(r.GPUs[0].Time, r.GPUs[n-1].Time)
		}
		if n := len(r.Waiting); n > 0 {
			widen(r.Waiting[0].Time, r.Waiting[n-1].Time)
		}
	}
	start = min(start, 0)
	if end <= start {
		end = start + 1
	}
	return start, end
}

// waitingPanel draws the jobs waiting over time under each policy of one
// comparison.
func waitingPanel(c Comparison) (*plot.Plot, error) {
	start, end := span(c)
	unit, scale := timeUnit(end - start)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Jobs waiting (submitted, not started): %s", c.Workload.Name)
	p.X.Label.Text = "virtual time (" + unit + ")"
	p.Y.Label.Text = "jobs"
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	top := 1.0
	for i, r := range c.Results {
		pts := waitingSeries(r.Waiting, end)
		if len(pts) == 0 {
			continue
		}
		l, err := stepLine(pts, scale)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(0.8 + 1.2*float64(len(c.Results)-1-i))
		p.Add(l)
		p.Legend.Add(r.Policy, l)
		for _, s := range pts {
			top = max(top, s.Y)
		}
	}
	p.Y.Min, p.Y.Max = 0, top*1.35
	p.X.Min, p.X.Max = float64(start)/scale, float64(end)/scale
	return p, nil
}

// waitingSeries is the step series of jobs waiting, reduced as GPU series
// are (the highest value of each bucket) and extended to end.
func waitingSeries(w []sim.Waiting, end int64) plotter.XYs {
	samples := make([]sim.Sample, len(w))
	for i, x := range w {
		samples[i] = sim.Sample{Time: x.Time, Running: int64(x.Jobs)}
	}
	return Downsample(samples, func(s sim.Sample) int64 { return s.Running }, end, plotBuckets)
}

// panel draws the GPUs in use of one comparison.
func panel(c Comparison) (*plot.Plot, error) {
	start, end := span(c)
	unit, scale := timeUnit(end - start)

	p := plot.New()
	p.Title.Text = fmt.Sprintf("GPUs in use: %s (%s)", c.Workload.Name, plural(capacity(c.Workload, maxTime), "GPU"))
	p.X.Label.Text = "virtual time (" + unit + ")"
	p.Y.Label.Text = "GPUs"
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)

	top := float64(capacity(c.Workload, maxTime))
	capLine, err := stepLine(capacitySeries(c.Workload, end), scale)
	if err != nil {
		return nil, err
	}
	capLine.Color = color.Gray{Y: 150}
	p.Add(capLine)
	p.Legend.Add("capacity", capLine)

	for i, r := range c.Results {
		running, held, differ := series(r.GPUs, end)
		l, err := stepLine(running, scale)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		// Earlier policies are drawn wider, so lines that coincide show as
		// nested colours instead of hiding each other.
		l.Width = vg.Points(0.8 + 1.2*float64(len(c.Results)-1-i))
		p.Add(l)
		p.Legend.Add(r.Policy+" (running jobs)", l)
		if differ {
			h, err := stepLine(held, scale)
			if err != nil {
				return nil, err
			}
			h.Color = plotutil.Color(i)
			h.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(h)
			p.Legend.Add(r.Policy+" (held, incl. idle members)", h)
		}
		for _, s := range held {
			top = max(top, s.Y)
		}
	}
	// Headroom for the legend above the lines.
	p.Y.Min, p.Y.Max = 0, max(1, top)*1.35
	p.X.Min, p.X.Max = float64(start)/scale, float64(end)/scale
	return p, nil
}

// stepLine makes a post-step line from points in seconds, scaled to the axis
// unit.
func stepLine(pts plotter.XYs, scale float64) (*plotter.Line, error) {
	scaled := make(plotter.XYs, len(pts))
	for i, p := range pts {
		scaled[i] = plotter.XY{X: p.X / scale, Y: p.Y}
	}
	l, err := plotter.NewLine(scaled)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	l.StepStyle = plotter.PostStep
	return l, nil
}

// capacitySeries is the GPUs of the cluster over [0, end].
func capacitySeries(w *workload.Workload, end int64) plotter.XYs {
	times := []int64{0}
	for _, p := range w.Pools {
		if p.At > 0 && p.At < end {
			times = append(times, p.At)
		}
	}
	slices.Sort(times)
	pts := make(plotter.XYs, 0, len(times)+1)
	for _, t := range times {
		pts = append(pts, plotter.XY{X: float64(t), Y: float64(capacity(w, t))})
	}
	pts = append(pts, plotter.XY{X: float64(end), Y: float64(capacity(w, end))})
	return pts
}

// series returns the Running and Held step series of samples, reduced to
// at most plotBuckets steps each and extended to end, and whether they
// differ anywhere.
func series(samples []sim.Sample, end int64) (running, held plotter.XYs, differ bool) {
	for _, s := range samples {
		if s.Held != s.Running {
			differ = true
			break
		}
	}
	running = Downsample(samples, func(s sim.Sample) int64 { return s.Running }, end, plotBuckets)
	if differ {
		held = Downsample(samples, func(s sim.Sample) int64 { return s.Held }, end, plotBuckets)
	} else {
		held = running
	}
	return running, held, differ
}

// Downsample turns the step function value(samples) (each sample's value
// holds until the next sample's time) into at most buckets+1 points over
// [samples[0].Time, end]: each bucket of equal width becomes one step at the
// bucket's start with the highest value the function takes in it. Series
// short enough are returned step for step. Consecutive equal values are
// merged either way. Samples must be sorted by time.
func Downsample(samples []sim.Sample, value func(sim.Sample) int64, end int64, buckets int) plotter.XYs {
	if len(samples) == 0 {
		return nil
	}
	end = max(end, samples[len(samples)-1].Time)
	var pts plotter.XYs
	emit := func(t int64, v int64) {
		if n := len(pts); n > 0 && pts[n-1].Y == float64(v) {
			return
		}
		if n := len(pts); n > 0 && pts[n-1].X == float64(t) {
			pts[n-1].Y = float64(v)
			return
		}
		pts = append(pts, plotter.XY{X: float64(t), Y: float64(v)})
	}
	t0 := samples[0].Time
	if len(samples) <= buckets || end <= t0 {
		for _, s := range samples {
			emit(s.Time, value(s))
		}
	} else {
		width := float64(end-t0) / float64(buckets)
		i := 0
		carry := value(samples[0]) // the value in force at the bucket's start
		for b := 0; b < buckets; b++ {
			lo := t0 + int64(float64(b)*width)
			hi := t0 + int64(float64(b+1)*width)
			if b == buckets-1 {
				hi = end + 1
			}
			peak := carry
			for ; i < len(samples) && samples[i].Time < hi; i++ {
				v := value(samples[i])
				peak = max(peak, v)
				carry = v
			}
			emit(lo, peak)
		}
	}
	last := pts[len(pts)-1]
	if last.X < float64(end) {
		pts = append(pts, plotter.XY{X: float64(end), Y: last.Y})
	}
	return pts
}

// niceTicks marks about six round values (1, 2 or 5 times a power of ten)
// along an axis, labelled without needless decimals.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', -1, 64)}}
	}
	raw := (hi - lo) / 6
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*step >= raw {
			step *= m
			break
		}
	}
	// As many decimals as the step has, no more: 3 steps of 0.2 are 0.6,
	// not 0.6000000000000001.
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v = math.Round(v/step) * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		for k := 1; k < 5; k++ {
			if minor := v + float64(k)*step/5; minor <= hi {
				ticks = append(ticks, plot.Tick{Value: minor})
			}
		}
	}
	return ticks
}
