package dev.sluice.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/** Writes a file whole or not at all: into a temporary file beside it, then an atomic move. */
final class Output {
  private Output() {}

  interface Writer {
    void write(OutputStream out) throws IOException;
  }

  /** Text to {@code target} (atomically), or to {@code out} when there is no target. */
  static void text(Path target, java.io.PrintWriter out, String text) throws IOException {
    if (target == null) {
      out.print(text);
      out.flush();
    } else {
      atomically(target, o -> o.write(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
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
}
