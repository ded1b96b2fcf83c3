/**
 * A self-signed certificate authority and a serving certificate it signs,
 * made with WebCrypto (ECDSA P-256, SHA-256) and a small DER writer: what
 * `serveKubeApi({ tls: true })` serves with and puts in the kubeconfig.
 *
 * @module
 */

import { concatBytes } from "./_bytes.ts";

/** PEM-encoded TLS material. */
export interface TlsMaterial {
  /** The serving certificate (PEM). */
  readonly cert: string;
  /** The serving certificate's private key (PKCS #8 PEM). */
  readonly key: string;
  /** The certificate authority that signed `cert` (PEM). */
  readonly ca: string;
}

const ECDSA = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN = { name: "ECDSA", hash: "SHA-256" } as const;
const DAY = 24 * 60 * 60 * 1000;

function length(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

/** One DER type-length-value. */
function tlv(tag: number, ...contents: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const body = concatBytes(contents);
  return concatBytes([Uint8Array.of(tag), length(body.byteLength), body]);
}

const seq = (...items: Uint8Array[]) => tlv(0x30, ...items);
const text = (s: string) => new TextEncoder().encode(s);

function oid(dotted: string): Uint8Array {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    const groups: number[] = [];
    for (let v = n;; v = Math.floor(v / 128)) {
      groups.unshift((v & 0x7f) | (groups.length === 0 ? 0 : 0x80));
      if (v < 128) break;
    }
    out.push(...groups);
  }
  return tlv(0x06, Uint8Array.from(out));
}

/** A non-negative INTEGER from big-endian bytes. */
function unsigned(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, ...(trimmed[0] & 0x80 ? [Uint8Array.of(0), trimmed] : [trimmed]));
}

function time(at: Date): Uint8Array {
  const iso = at.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return tlv(0x17, text(`${iso.slice(2)}Z`)); // UTCTime, valid until 2049
}

function commonName(cn: string): Uint8Array {
  return seq(tlv(0x31, seq(oid("2.5.4.3"), tlv(0x0c, text(cn)))));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return seq(oid(id), ...(critical ? [tlv(0x01, Uint8Array.of(0xff))] : []), tlv(0x04, value));
}

function ipBytes(ip: string): Uint8Array | undefined {
  const parts = ip.split(".");
  if (parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) < 256)) {
    return Uint8Array.from(parts.map(Number));
  }
  if (ip === "::1") return Uint8Array.of(...new Array(15).fill(0), 1);
  return undefined;
}

const ALGORITHM = seq(oid("1.2.840.10045.4.3.2")); // ecdsa-with-SHA256

/** WebCrypto's raw r‖s signature as the DER `Ecdsa-Sig-Value` X.509 carries. */
function derSignature(raw: Uint8Array): Uint8Array {
  const half = raw.byteLength / 2;
  return seq(unsigned(raw.subarray(0, half)), unsigned(raw.subarray(half)));
}

interface CertificateInput {
  readonly subject: string;
  readonly issuer: string;
  readonly publicKey: CryptoKey;
  readonly signer: CryptoKey;
  readonly ca: boolean;
  readonly hosts: readonly string[];
  readonly days: number;
}

async function certificate(input: CertificateInput): Promise<Uint8Array> {
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", input.publicKey));
  const now = Date.now();
  const extensions = input.ca
    ? [
      extension("2.5.29.19", true, seq(tlv(0x01, Uint8Array.of(0xff)))),
      // digitalSignature, keyCertSign, cRLSign
      extension("2.5.29.15", true, tlv(0x03, Uint8Array.of(1, 0x86))),
    ]
    : [
      extension("2.5.29.19", true, seq()),
      extension("2.5.29.15", true, tlv(0x03, Uint8Array.of(7, 0x80))), // digitalSignature
      extension("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))), // serverAuth
      extension(
        "2.5.29.17",
        false,
        seq(...input.hosts.map((h) => {
          const ip = ipBytes(h);
          return ip === undefined ? tlv(0x82, text(h)) : tlv(0x87, ip);
        })),
      ),
    ];
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Uint8Array.of(2))),
    unsigned(serial),
    ALGORITHM,
    commonName(input.issuer),
    seq(time(new Date(now - DAY)), time(new Date(now + input.days * DAY))),
    commonName(input.subject),
    spki,
    tlv(0xa3, seq(...extensions)),
  );
  const raw = new Uint8Array(await crypto.subtle.sign(SIGN, input.signer, tbs));
  return seq(tbs, ALGORITHM, tlv(0x03, Uint8Array.of(0), derSignature(raw)));
}

function pem(label: string, der: Uint8Array): string {
  let binary = "";
  for (const byte of der) binary += String.fromCharCode(byte);
  const lines = btoa(binary).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/**
 * Generates a CA (valid ten years) and a serving certificate it signs (valid
 * one year) for `hosts`: DNS names, or IPv4 addresses and `::1`.
 */
export async function generateTls(hosts: readonly string[]): Promise<TlsMaterial> {
  const caKeys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const serverKeys = await crypto.subtle.generateKey(ECDSA, true, ["sign", "verify"]);
  const caName = "beehive Kubernetes API CA";
  const ca = await certificate({
    subject: caName,
    issuer: caName,
    publicKey: caKeys.publicKey,
    signer: caKeys.privateKey,
    ca: true,
    hosts: [],
    days: 3650,
  });
  const cert = await certificate({
    subject: "beehive Kubernetes API",
    issuer: caName,
    publicKey: serverKeys.publicKey,
    signer: caKeys.privateKey,
    ca: false,
    hosts: [...new Set(hosts)],
    days: 365,
  });
  const key = new Uint8Array(await crypto.subtle.exportKey("pkcs8", serverKeys.privateKey));
  return {
    cert: pem("CERTIFICATE", cert),
    key: pem("PRIVATE KEY", key),
    ca: pem("CERTIFICATE", ca),
  };
}
