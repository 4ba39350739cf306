/** Types of eml-writer.js (plain JavaScript, so a worker thread can load it without a compiler). */
export interface EmlMail {
  id: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string | null;
}

export declare const THREAD_MARK: 'checkstandEmlWriter';

export declare function envelopeOf(mail: EmlMail): {
  from: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
  messageId: string;
};

export interface EmlWriter {
  /** Builds and writes the message; answers its Message-ID. */
  write(mail: EmlMail): Promise<string>;
  fileOf(id: string): string;
  close(): void;
}

export declare function emlWriter(dir: string): EmlWriter;

/** A message to the mail thread, and its answer. */
export interface EmlRequest {
  seq: number;
  mail: EmlMail;
}
export type EmlAnswer = { seq: number; ref: string; error?: undefined } | { seq: number; error: string; ref?: undefined };
