package dev.sluice.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * One logging backend and one line format for the whole command: Sluice's own lines
 * ({@code System.Logger}) and its libraries' (Jetty, HikariCP, Lettuce and Netty, through SLF4J's
 * {@code slf4j-jdk14}) all go to {@code java.util.logging}, which writes each record to stderr as
 * one line: {@code 2026-11-23T11:05:45.123Z WARN  org.eclipse.jetty.server.Server: message}
 * (a stack trace, if any, follows on the next lines). Sluice logs from INFO, libraries from WARN;
 * {@code SLUICE_LOG_LEVEL} (error, warn, info, debug) sets both.
 */
final class Logs {
  /** The line every record starts with; tests match it. */
  static final String LINE = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z (ERROR|WARN |INFO |DEBUG|TRACE) \\S+: .*";
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);

  private Logs() {}

  static void configure(String level) {
    Level libraries = Level.WARNING;
    Level own = Level.INFO;
    if (level != null && !level.isBlank()) {
      own = parse(level);
      libraries = own;
    }
    LogManager.getLogManager().reset();
    Logger root = Logger.getLogger("");
    Handler h = new ConsoleHandler();   // stderr
    h.setLevel(Level.ALL);
    h.setFormatter(new OneLine());
    root.addHandler(h);
    root.setLevel(libraries);
    Logger.getLogger("dev.sluice").setLevel(own);
  }

  private static Level parse(String level) {
    return switch (level.trim().toLowerCase(Locale.ROOT)) {
      case "error" -> Level.SEVERE;
      case "warn", "warning" -> Level.WARNING;
      case "debug" -> Level.FINE;
      case "trace" -> Level.FINEST;
      default -> Level.INFO;
    };
  }

  private static String name(Level l) {
    int v = l.intValue();
    return v >= Level.SEVERE.intValue() ? "ERROR" : v >= Level.WARNING.intValue() ? "WARN "
        : v >= Level.INFO.intValue() ? "INFO " : v >= Level.FINE.intValue() ? "DEBUG" : "TRACE";
  }

  /** {@code time LEVEL logger: message}, one line, then the stack trace if any. */
  static final class OneLine extends Formatter {
    @Override
    public String format(LogRecord r) {
      StringBuilder b = new StringBuilder(160);
      b.append(TIME.format(Instant.ofEpochMilli(r.getMillis()))).append(' ').append(name(r.getLevel()))
          .append(' ').append(r.getLoggerName() == null ? "-" : r.getLoggerName()).append(": ")
          .append(formatMessage(r).replace('\n', ' ')).append(System.lineSeparator());
      if (r.getThrown() != null) {
        StringWriter w = new StringWriter();
        r.getThrown().printStackTrace(new PrintWriter(w));
        b.append(w);
      }
      return b.toString();
    }
  }
}
