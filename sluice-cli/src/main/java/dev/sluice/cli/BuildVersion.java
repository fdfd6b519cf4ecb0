package dev.sluice.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine;

/**
 * What {@code sluice --version} prints: Sluice's version and the commit it was built from (with
 * "local changes" when the build's sources differed from it), then the Java runtime and the
 * system. The build writes them into {@code build.properties} beside this class; a build from
 * sources without their git history says the commit is unknown.
 */
final class BuildVersion implements CommandLine.IVersionProvider {
  /** The build's properties, empty if the build wrote none. */
  static Properties properties() {
    Properties p = new Properties();
    try (InputStream in = BuildVersion.class.getResourceAsStream("build.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the build's properties", e);
    }
    return p;
  }

  @Override
  public String[] getVersion() {
    Properties p = properties();
    String commit = p.getProperty("git.commit.id.abbrev", "");
    String built = commit.isEmpty() ? "commit unknown"
        : "commit " + commit + ("true".equals(p.getProperty("git.dirty")) ? " with local changes"
            : "") + ", " + p.getProperty("git.commit.time", "time unknown");
    return new String[] {
        "sluice " + p.getProperty("git.build.version", "(version unknown)") + " (" + built + ")",
        "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vendor")
            + "), " + System.getProperty("os.name") + " " + System.getProperty("os.arch")};
  }
}
