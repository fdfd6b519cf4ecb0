package dev.sluice.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.function.Consumer;
import javax.imageio.ImageIO;

/** Writes a file whole or not at all: into a temporary file beside it, then an atomic move. */
final class Output {
  private Output() {}

  interface Writer {
    void write(OutputStream out) throws IOException;
  }

  /** Text to {@code target} (atomically), or to {@code out} when there is no target. */
  static void text(Path target, PrintWriter out, String text) throws IOException {
    if (target == null) {
      out.print(text);
      out.flush();
    } else {
      atomically(target, o -> o.write(text.getBytes(StandardCharsets.UTF_8)));
    }
  }

  static void atomically(Path target, Writer writer) throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    // Created like any new file (the umask applies), unlike createTempFile's owner-only mode.
    Path tmp = dir.resolve("." + target.getFileName() + "." + ProcessHandle.current().pid()
        + "." + System.nanoTime() + ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(tmp, StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE)) {
        writer.write(out);
      }
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * A plot of {@code width} by {@code height} pixels, drawn by {@code draw}, to {@code target}
   * (atomically): a PNG image if its name ends in .png, else SVG text.
   */
  static void plot(Path target, int width, int height, Consumer<Canvas> draw)
      throws IOException {
    if (target.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".png")) {
      Canvas.Png png = new Canvas.Png(width, height);
      draw.accept(png);
      atomically(target, o -> ImageIO.write(png.image, "png", o));
    } else {
      Canvas.Svg svg = new Canvas.Svg(width, height);
      draw.accept(svg);
      text(target, null, svg.finish());
    }
  }

  /** Checks a command's {@code --plot} and {@code --width}. */
  static void checkPlot(Path plot, int width) {
    if (plot != null && !plot.getFileName().toString().matches("(?i).*\\.(svg|png)")) {
      throw new InputException("--plot must name a .svg or .png file but was '" + plot + "'");
    }
    if (width < 400 || width > 10_000) {
      throw new InputException("--width must be between 400 and 10000 but was " + width);
    }
  }
}
