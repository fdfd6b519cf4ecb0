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
