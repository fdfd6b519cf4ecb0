package dev.sluice.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** Writes a file whole or not at all: into a temporary file beside it, then an atomic move. */
final class Output {
  private Output() {}

  interface Writer {
    void write(OutputStream out) throws IOException;
  }

  static void atomically(Path target, Writer writer) throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, ".sluice-", ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(tmp)) {
        writer.write(out);
      }
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
