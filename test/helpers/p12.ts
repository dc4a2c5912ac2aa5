import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

export interface TestP12 {
  /** DER bytes of the PKCS#12 file. */
  der: Buffer;
  /** The merchant certificate's subject serialNumber (the expected JWT kid). */
  serialNumber: string;
  /** PEM of the merchant certificate's public key, for verifying RS256 tokens. */
  publicKeyPem: string;
}

function makeCert(
  key: forge.pki.rsa.PrivateKey,
  publicKey: forge.pki.rsa.PublicKey,
  subject: forge.pki.CertificateField[],
  serial: string,
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = serial;
  cert.validity.notBefore = new Date('2024-01-01T00:00:00Z');
  cert.validity.notAfter = new Date('2034-01-01T00:00:00Z');
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(key, forge.md.sha256.create());
  return cert;
}

/**
 * A self-signed merchant certificate plus its RSA key, packed like a CyberSource key file: the
 * merchant certificate (friendlyName "serialNumber=…,CN=<alias>") first, optionally followed by a
 * second (CA-like) certificate without friendlyName.
 */
export function createTestP12(options: {
  alias: string;
  password: string;
  serialNumber?: string;
  friendlyName?: string | null;
  extraCert?: boolean;
}): TestP12 {
  const serialNumber = options.serialNumber ?? '8891239123456789012345';
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const key = forge.pki.privateKeyFromPem(privatePem);
  const pub = forge.pki.publicKeyFromPem(publicKeyPem);
  const cert = makeCert(
    key,
    pub,
    [
      { name: 'commonName', value: options.alias },
      { name: 'serialNumber', value: serialNumber },
    ],
    '01',
  );
  const chain = [cert];
  if (options.extraCert) {
    chain.push(makeCert(key, pub, [{ name: 'commonName', value: 'CyberSourceCertAuth' }], '02'));
  }
  const friendlyName =
    options.friendlyName === null
      ? undefined
      : (options.friendlyName ?? `serialNumber=${serialNumber},CN=${options.alias}`);
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, chain, options.password, {
    algorithm: '3des',
    ...(friendlyName === undefined ? {} : { friendlyName }),
  });
  const der = Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
  return { der, serialNumber, publicKeyPem };
}
