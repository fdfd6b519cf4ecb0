package dev.sluice.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;

/**
 * Headless Chromium driven by chromedriver (Debian's {@code chromium} and {@code
 * chromium-driver}, which {@code .ci/run} installs). Where they are missing the browser tests
 * fail when {@code SLUICE_BROWSER_TESTS=required} (as {@code .ci/run} sets it) and are skipped,
 * saying why, otherwise. {@code SLUICE_CHROMIUM} and {@code SLUICE_CHROMEDRIVER} name other
 * binaries. Selenium is an optional dependency of the test kit: a module that uses this class
 * names {@code selenium-chrome-driver} among its test dependencies.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class Browser implements AutoCloseable {
  private static final Path CHROMIUM = Path.of(env("SLUICE_CHROMIUM", "/usr/bin/chromium"));
  private static final Path DRIVER = Path.of(env("SLUICE_CHROMEDRIVER", "/usr/bin/chromedriver"));

  /** The browser, to drive. */
  public final ChromeDriver driver;
  private final Path profile;

  private Browser(ChromeDriver driver, Path profile) {
    this.driver = driver;
    this.profile = profile;
  }

  private static String env(String name, String otherwise) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? otherwise : v;
  }

  /** A new headless browser, or the test skipped (failed where browser tests are required). */
  public static Browser open() throws IOException {
    boolean present = Files.isExecutable(CHROMIUM) && Files.isExecutable(DRIVER);
    if (!present) {
      String why = "the browser tests need Chromium at " + CHROMIUM + " and chromedriver at "
          + DRIVER + " (Debian: apt-get install chromium chromium-driver)";
      if ("required".equals(System.getenv("SLUICE_BROWSER_TESTS"))) {
        throw new AssertionError(why + "; SLUICE_BROWSER_TESTS=required");
      }
      Assumptions.abort(why);
    }
    Path profile = Files.createTempDirectory("sluice-chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    // no network beyond loopback on these machines: Chromium's background calls stay off
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu",
        "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--window-size=1400,1800", "--user-data-dir=" + profile);
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    options.setExperimentalOption("prefs", Map.of("credentials_enable_service", false));
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(DRIVER.toFile()).usingAnyFreePort().build();
    return new Browser(new ChromeDriver(service, options), profile);
  }

  /** The page's console messages since the last call, SEVERE ones (errors) only. */
  public List<String> errors() {
    return driver.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
        .map(LogEntry::getMessage).toList();
  }

  @Override
  public void close() throws IOException {
    try {
      driver.quit();
    } finally {
      try (var files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }
}
