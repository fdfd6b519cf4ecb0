package dev.sluice.testkit;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;

/** An exact rational number, for the reference model. Immutable. */
final class Fraction implements Comparable<Fraction> {
  static final Fraction ZERO = new Fraction(BigInteger.ZERO, BigInteger.ONE);

  final BigInteger num;
  final BigInteger den;

  private Fraction(BigInteger num, BigInteger den) {
    if (den.signum() < 0) {
      num = num.negate();
      den = den.negate();
    }
    BigInteger g = num.gcd(den);
    if (!g.equals(BigInteger.ONE) && g.signum() != 0) {
      num = num.divide(g);
      den = den.divide(g);
    }
    this.num = num;
    this.den = den;
  }

  static Fraction of(long n) {
    return new Fraction(BigInteger.valueOf(n), BigInteger.ONE);
  }

  static Fraction of(BigDecimal d) {
    return d.scale() <= 0 ? new Fraction(d.toBigIntegerExact(), BigInteger.ONE)
        : new Fraction(d.unscaledValue(), BigInteger.TEN.pow(d.scale()));
  }

  static Fraction of(double d) {
    return of(new BigDecimal(d));
  }

  Fraction add(Fraction o) {
    return new Fraction(num.multiply(o.den).add(o.num.multiply(den)), den.multiply(o.den));
  }

  Fraction subtract(Fraction o) {
    return add(o.negate());
  }

  Fraction negate() {
    return new Fraction(num.negate(), den);
  }

  Fraction multiply(Fraction o) {
    return new Fraction(num.multiply(o.num), den.multiply(o.den));
  }

  Fraction divide(Fraction o) {
    return new Fraction(num.multiply(o.den), den.multiply(o.num));
  }

  Fraction max(Fraction o) {
    return compareTo(o) >= 0 ? this : o;
  }

  Fraction min(Fraction o) {
    return compareTo(o) <= 0 ? this : o;
  }

  int signum() {
    return num.signum();
  }

  /** The least integer not below this. */
  long ceil() {
    BigInteger[] qr = num.divideAndRemainder(den);
    BigInteger q = qr[0];
    if (qr[1].signum() > 0) {
      q = q.add(BigInteger.ONE);
    }
    return q.longValueExact();
  }

  double doubleValue() {
    return new BigDecimal(num).divide(new BigDecimal(den), MathContext.DECIMAL128).doubleValue();
  }

  @Override
  public int compareTo(Fraction o) {
    return num.multiply(o.den).compareTo(o.num.multiply(den));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Fraction && compareTo((Fraction) o) == 0;
  }

  @Override
  public int hashCode() {
    return num.hashCode() * 31 + den.hashCode();
  }

  @Override
  public String toString() {
    return den.equals(BigInteger.ONE) ? num.toString() : num + "/" + den;
  }
}
