package org.acemq.amqp.reliability;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import javax.imageio.ImageIO;

/**
 * One soak metric as a PNG line chart, drawn with {@code java.awt} (headless): x = messages processed, one line per
 * consumer incarnation (coloured by consumer position, so a restarted consumer continues in its colour), the first
 * and last windows shaded, each injected fault a labelled vertical line, and the bound the verdict checks as a dashed
 * red line.
 */
final class SoakChart {

    /** A line: its points (x, y) in x order, and the colour index (consumer position). */
    record Series(String name, int colour, List<double[]> points) {
    }

    /** A fault marker. */
    record Marker(double x, String label) {
    }

    private static final int WIDTH = 960;
    private static final int HEIGHT = 400;
    private static final int LEFT = 70;
    private static final int RIGHT = 20;
    private static final int TOP = 34;
    private static final int BOTTOM = 46;
    private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
            new Color(0x9467bd), new Color(0x8c564b), new Color(0x17becf)};

    private SoakChart() {
    }

    /**
     * @param bound the checked upper bound for the last window (drawn over the last window), or NaN for none
     * @param window the window size in messages (first: [0, window], last: [xMax - window, xMax])
     */
    static void write(Path file, String title, String yLabel, List<Series> series, List<Marker> markers,
            double bound, double window, double xMax) throws IOException {
        double yMax = Double.isNaN(bound) ? 0 : bound;
        for (Series s : series) {
            for (double[] p : s.points()) {
                yMax = Math.max(yMax, p[1]);
            }
        }
        yMax = niceCeiling(yMax <= 0 ? 1 : yMax * 1.1);
        double xTop = xMax <= 0 ? 1 : xMax;

        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, WIDTH, HEIGHT);
        int plotW = WIDTH - LEFT - RIGHT;
        int plotH = HEIGHT - TOP - BOTTOM;
        Font small = new Font(Font.SANS_SERIF, Font.PLAIN, 11);
        Font big = new Font(Font.SANS_SERIF, Font.BOLD, 14);

        // windows
        g.setColor(new Color(0xeeeeee));
        int w0 = x(Math.min(window, xTop), xTop, plotW);
        g.fillRect(LEFT, TOP, w0 - LEFT, plotH);
        int w1 = x(Math.max(0, xTop - window), xTop, plotW);
        g.fillRect(w1, TOP, LEFT + plotW - w1, plotH);

        // grid and axes
        g.setFont(small);
        FontMetrics fm = g.getFontMetrics();
        for (int i = 0; i <= 5; i++) {
            double v = yMax * i / 5;
            int y = y(v, yMax, plotH);
            g.setColor(new Color(0xdddddd));
            g.drawLine(LEFT, y, LEFT + plotW, y);
            g.setColor(Color.DARK_GRAY);
            String label = format(v);
            g.drawString(label, LEFT - 6 - fm.stringWidth(label), y + 4);
        }
        for (int i = 0; i <= 10; i++) {
            double v = xTop * i / 10;
            int x = x(v, xTop, plotW);
            g.setColor(Color.DARK_GRAY);
            g.drawLine(x, TOP + plotH, x, TOP + plotH + 4);
            String label = format(v);
            g.drawString(label, x - fm.stringWidth(label) / 2, TOP + plotH + 16);
        }
        g.drawRect(LEFT, TOP, plotW, plotH);
        g.drawString("messages processed (effect rows)", LEFT + plotW / 2 - 90, HEIGHT - 8);

        // faults
        int labelRow = 0;
        for (Marker m : markers) {
            int x = x(m.x(), xTop, plotW);
            g.setColor(new Color(0xbbbbbb));
            g.setStroke(new BasicStroke(1f));
            g.drawLine(x, TOP, x, TOP + plotH);
            g.setColor(Color.GRAY);
            g.drawString(m.label(), x + 2, TOP + 11 + 11 * (labelRow++ % 4));
        }

        // bound over the last window
        if (!Double.isNaN(bound)) {
            g.setColor(Color.RED);
            g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f},
                    0f));
            int y = y(bound, yMax, plotH);
            g.drawLine(w1, y, LEFT + plotW, y);
            g.drawString("bound " + format(bound), w1 + 4, y - 4);
        }

        // series
        g.setStroke(new BasicStroke(1.6f));
        for (Series s : series) {
            g.setColor(PALETTE[Math.floorMod(s.colour(), PALETTE.length)]);
            int px = -1;
            int py = -1;
            for (double[] p : s.points()) {
                int cx = x(p[0], xTop, plotW);
                int cy = y(p[1], yMax, plotH);
                if (px >= 0) {
                    g.drawLine(px, py, cx, cy);
                } else {
                    g.fillOval(cx - 2, cy - 2, 4, 4);
                }
                px = cx;
                py = cy;
            }
        }

        // title, y label, legend
        g.setColor(Color.BLACK);
        g.setFont(big);
        g.drawString(title, LEFT, 20);
        g.setFont(small);
        g.drawString(yLabel, 6, TOP - 8);
        int lx = WIDTH - RIGHT - 6;
        java.util.LinkedHashMap<Integer, String> legend = new java.util.LinkedHashMap<>();
        for (Series s : series) {
            legend.putIfAbsent(s.colour(), s.name().replaceAll("\\.\\d+$", ""));
        }
        for (Map.Entry<Integer, String> e : legend.entrySet()) {
            int tw = fm.stringWidth(e.getValue());
            lx -= tw;
            g.setColor(PALETTE[Math.floorMod(e.getKey(), PALETTE.length)]);
            g.drawString(e.getValue(), lx, 20);
            lx -= 14;
        }
        g.dispose();
        ImageIO.write(image, "png", file.toFile());
    }

    private static int x(double v, double xMax, int plotW) {
        return LEFT + (int) Math.round(v / xMax * plotW);
    }

    private static int y(double v, double yMax, int plotH) {
        return TOP + plotH - (int) Math.round(v / yMax * plotH);
    }

    private static double niceCeiling(double v) {
        double magnitude = Math.pow(10, Math.floor(Math.log10(v)));
        for (double step : new double[] {1, 2, 2.5, 5, 10}) {
            if (step * magnitude >= v) {
                return step * magnitude;
            }
        }
        return 10 * magnitude;
    }

    static String format(double v) {
        if (v >= 1_000_000) {
            return String.format(Locale.ROOT, "%.1fM", v / 1_000_000);
        }
        if (v >= 10_000) {
            return String.format(Locale.ROOT, "%.0fk", v / 1000);
        }
        if (v >= 1000) {
            return String.format(Locale.ROOT, "%.1fk", v / 1000);
        }
        return v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v);
    }
}
