package dev.sluice.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Line2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.util.Locale;

/** The few drawing primitives a plot needs, rendered as SVG text or into a PNG image. */
interface Canvas {
  void line(double x1, double y1, double x2, double y2, String color, double width, boolean dashed,
      String cssClass);

  void polyline(double[] xs, double[] ys, int n, String color, double width, String cssClass);

  void marker(String shape, double x, double y, double r, String color, String cssClass);

  void text(double x, double y, String s, double size, String anchor, String color, boolean bold);

  void group(String id);

  void endGroup();

  /** SVG: elements carry a class, panels are groups with ids, so the series can be found. */
  final class Svg implements Canvas {
    private final StringBuilder b = new StringBuilder();

    Svg(int width, int height) {
      b.append(String.format(Locale.ROOT,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>%n<svg xmlns=\"http://www.w3.org/2000/svg\""
              + " width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">%n"
              + "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>%n", width, height, width, height));
    }

    private static String f(double v) {
      return String.format(Locale.ROOT, "%.1f", v);
    }

    static String escape(String s) {
      return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    @Override
    public void line(double x1, double y1, double x2, double y2, String color, double width,
        boolean dashed, String cssClass) {
      b.append("<line class=\"").append(cssClass).append("\" x1=\"").append(f(x1)).append("\" y1=\"")
          .append(f(y1)).append("\" x2=\"").append(f(x2)).append("\" y2=\"").append(f(y2))
          .append("\" stroke=\"").append(color).append("\" stroke-width=\"").append(f(width)).append('"')
          .append(dashed ? " stroke-dasharray=\"6 4\"" : "").append("/>\n");
    }

    @Override
    public void polyline(double[] xs, double[] ys, int n, String color, double width, String cssClass) {
      b.append("<polyline class=\"").append(cssClass).append("\" fill=\"none\" stroke=\"").append(color)
          .append("\" stroke-width=\"").append(f(width)).append("\" points=\"");
      for (int i = 0; i < n; i++) {
        b.append(f(xs[i])).append(',').append(f(ys[i])).append(i + 1 < n ? " " : "");
      }
      b.append("\"/>\n");
    }

    @Override
    public void marker(String shape, double x, double y, double r, String color, String cssClass) {
      switch (shape) {
        case "cross":
          b.append("<path class=\"").append(cssClass).append("\" d=\"M").append(f(x - r)).append(' ')
              .append(f(y - r)).append("L").append(f(x + r)).append(' ').append(f(y + r)).append("M")
              .append(f(x - r)).append(' ').append(f(y + r)).append("L").append(f(x + r)).append(' ')
              .append(f(y - r)).append("\" stroke=\"").append(color).append("\" stroke-width=\"1.5\"/>\n");
          break;
        case "triangle":
          b.append("<path class=\"").append(cssClass).append("\" d=\"M").append(f(x)).append(' ')
              .append(f(y - r)).append("L").append(f(x + r)).append(' ').append(f(y + r)).append("L")
              .append(f(x - r)).append(' ').append(f(y + r)).append("Z\" fill=\"").append(color).append("\"/>\n");
          break;
        case "tick":
          b.append("<line class=\"").append(cssClass).append("\" x1=\"").append(f(x)).append("\" y1=\"")
              .append(f(y - r)).append("\" x2=\"").append(f(x)).append("\" y2=\"").append(f(y + r))
              .append("\" stroke=\"").append(color).append("\" stroke-width=\"1\"/>\n");
          break;
        default:
          b.append("<circle class=\"").append(cssClass).append("\" cx=\"").append(f(x)).append("\" cy=\"")
              .append(f(y)).append("\" r=\"").append(f(r)).append("\" fill=\"").append(color).append("\"/>\n");
      }
    }

    @Override
    public void text(double x, double y, String s, double size, String anchor, String color, boolean bold) {
      b.append("<text x=\"").append(f(x)).append("\" y=\"").append(f(y)).append("\" font-size=\"")
          .append(f(size)).append("\" text-anchor=\"").append(anchor).append("\" fill=\"").append(color)
          .append('"').append(bold ? " font-weight=\"bold\"" : "").append('>').append(escape(s))
          .append("</text>\n");
    }

    @Override
    public void group(String id) {
      b.append("<g id=\"").append(escape(id)).append("\">\n");
    }

    @Override
    public void endGroup() {
      b.append("</g>\n");
    }

    String finish() {
      return b.append("</svg>\n").toString();
    }
  }

  /** The same drawing into an image, for PNG. */
  final class Png implements Canvas {
    final BufferedImage image;
    private final Graphics2D g;

    Png(int width, int height) {
      image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
      g = image.createGraphics();
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, width, height);
    }

    private void stroke(String color, double width, boolean dashed) {
      g.setColor(Color.decode(color));
      g.setStroke(dashed ? new BasicStroke((float) width, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER,
          10f, new float[] {6f, 4f}, 0f) : new BasicStroke((float) width));
    }

    @Override
    public void line(double x1, double y1, double x2, double y2, String color, double width,
        boolean dashed, String cssClass) {
      stroke(color, width, dashed);
      g.draw(new Line2D.Double(x1, y1, x2, y2));
    }

    @Override
    public void polyline(double[] xs, double[] ys, int n, String color, double width, String cssClass) {
      if (n == 0) {
        return;
      }
      stroke(color, width, false);
      Path2D.Double p = new Path2D.Double();
      p.moveTo(xs[0], ys[0]);
      for (int i = 1; i < n; i++) {
        p.lineTo(xs[i], ys[i]);
      }
      g.draw(p);
    }

    @Override
    public void marker(String shape, double x, double y, double r, String color, String cssClass) {
      stroke(color, 1.5, false);
      switch (shape) {
        case "cross":
          g.draw(new Line2D.Double(x - r, y - r, x + r, y + r));
          g.draw(new Line2D.Double(x - r, y + r, x + r, y - r));
          break;
        case "triangle": {
          Path2D.Double p = new Path2D.Double();
          p.moveTo(x, y - r);
          p.lineTo(x + r, y + r);
          p.lineTo(x - r, y + r);
          p.closePath();
          g.fill(p);
          break;
        }
        case "tick":
          stroke(color, 1, false);
          g.draw(new Line2D.Double(x, y - r, x, y + r));
          break;
        default:
          g.fill(new Ellipse2D.Double(x - r, y - r, 2 * r, 2 * r));
      }
    }

    @Override
    public void text(double x, double y, String s, double size, String anchor, String color, boolean bold) {
      g.setColor(Color.decode(color));
      g.setFont(new Font(Font.SANS_SERIF, bold ? Font.BOLD : Font.PLAIN, (int) Math.round(size)));
      double w = g.getFontMetrics().stringWidth(s);
      double dx = anchor.equals("middle") ? -w / 2 : anchor.equals("end") ? -w : 0;
      g.drawString(s, (float) (x + dx), (float) y);
    }

    @Override
    public void group(String id) {}

    @Override
    public void endGroup() {}
  }
}
