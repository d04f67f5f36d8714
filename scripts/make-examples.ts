/**
 * Generates the PDF and DOCX documents of the sample corpus (examples/docs) from the content
 * defined below, so the binaries are reproducible and reviewable as text.
 *
 * Run: node --import tsx scripts/make-examples.ts
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Document,
  HeadingLevel,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
  WidthType,
} from 'docx';
import { PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from 'pdf-lib';

type Block =
  | { h: 2 | 3; text: string }
  | { p: string }
  | { list: string[] }
  | { table: string[][] };

interface SampleDoc {
  file: string;
  title: string;
  blocks: Block[];
}

const FIXED_DATE = new Date('2025-03-01T00:00:00Z');

const PDF_DOCS: SampleDoc[] = [
  {
    file: 'policies/procurement-policy.pdf',
    title: 'Procurement Policy',
    blocks: [
      {
        p: 'This policy governs how Halvorsen Riverworks buys goods, services and works, from spare parts to new vessels. It protects the money of the member-owners and keeps purchasing fair for suppliers. Policy owner: Rasmus Berg, Chief Financial Officer. Head of Procurement: Freya Lund. Version 2.4, effective 1 January 2025.',
      },
      { h: 2, text: 'Purchase thresholds' },
      {
        p: 'The number of quotes and the approval needed depend on the expected total value of the purchase over the whole contract period, excluding VAT.',
      },
      {
        table: [
          ['Contract value', 'Quotes needed', 'Approved by'],
          ['Up to 20,000 crowns', '1 quote', 'Budget holder'],
          ['20,001 to 150,000 crowns', '3 written quotes', 'Department head'],
          ['150,001 to 750,000 crowns', '3 quotes + evaluation', 'Director and CFO'],
          ['Above 750,000 crowns', 'Open tender', 'Board of Directors'],
        ],
      },
      {
        p: 'Purchases above 1.2 million crowns for works, or the public procurement threshold that applies to our lock concession, follow the public tender rules and are published on the national tender portal for at least 30 days.',
      },
      { h: 2, text: 'Choosing suppliers' },
      { h: 3, text: 'Approved supplier list' },
      {
        p: 'Recurring purchases are made from the approved supplier list, which the procurement team reviews every 12 months. A new supplier is added after a credit check, a signed supplier code of conduct and, for work on vessels or quays, proof of liability insurance of at least 10 million crowns.',
      },
      { h: 3, text: 'Evaluation criteria' },
      {
        p: 'Quotes above 150,000 crowns are scored on price (50 %), quality and delivery time (30 %) and environmental performance (20 %). The scoring sheet is kept with the purchase order for 10 years.',
      },
      { h: 2, text: 'Purchase orders and payment' },
      {
        p: 'A purchase order is raised in the finance system before the supplier starts work; invoices without a purchase order number are returned to the supplier. Standard payment terms are 30 days from the invoice date. Small suppliers with fewer than 10 employees are paid within 14 days.',
      },
      { h: 2, text: 'Emergency purchases' },
      {
        p: 'When a vessel is disabled or a lock is out of service, the duty dispatch manager may order repairs of up to 250,000 crowns without quotes. The purchase is documented on form PR-9 within 2 working days and reported to the CFO.',
      },
      { h: 2, text: 'Sustainability requirements' },
      {
        table: [
          ['Category', 'Requirement'],
          ['Fuel', 'HVO renewable diesel only, certified'],
          ['Paints and coatings', 'Biocide-free antifouling'],
          ['Vehicles', 'Electric or hybrid from 2026'],
          ['IT equipment', 'Take-back scheme, minimum 5-year support'],
        ],
      },
      {
        p: 'Exceptions to the sustainability requirements need the written approval of the Managing Director and are reported in the annual report.',
      },
    ],
  },
  {
    file: 'operations/incident-escalation.pdf',
    title: 'Incident Escalation Procedure',
    blocks: [
      {
        p: 'This procedure tells crews, lock operators and office staff how to report and escalate incidents, from a near-miss on a quay to a collision or pollution spill. The dispatch centre in Brannvik coordinates every incident. Owner: Karin Holm, Safety Manager. Revision 5, 15 January 2025.',
      },
      { h: 2, text: 'Severity levels' },
      {
        table: [
          ['Level', 'Description', 'Examples'],
          ['Level 1', 'Minor, no injury', 'Near-miss, small equipment damage'],
          ['Level 2', 'Moderate', 'First-aid injury, grounding without damage'],
          ['Level 3', 'Serious', 'Lost-time injury, collision, fuel spill under 100 litres'],
          ['Level 4', 'Major emergency', 'Person overboard, fire, spill over 100 litres'],
        ],
      },
      { h: 2, text: 'First actions' },
      {
        p: 'For a level 4 emergency, call the national emergency number 112 first, then the dispatch centre on VHF channel 10 or extension 4000. Sound the general alarm on board: seven short blasts and one long blast. The captain leads on board until emergency services arrive.',
      },
      { h: 2, text: 'Escalation contacts' },
      {
        p: 'The dispatch centre escalates according to the level. Where a contact cannot be reached within 15 minutes, the deputy is called.',
      },
      {
        table: [
          ['Level', 'Notify', 'Deadline', 'Deputy'],
          ['Level 1', 'Site supervisor', 'End of shift', 'Dispatch centre'],
          ['Level 2', 'Safety Manager, Karin Holm', '4 hours', 'Anders Vik'],
          ['Level 3', 'Director of Operations, Jonas Lindqvist', '1 hour', 'Karin Holm'],
          ['Level 4', 'Managing Director, Selma Okafor', '30 minutes', 'Jonas Lindqvist'],
        ],
      },
      {
        p: 'Pollution of any size is reported to the regional water authority within 2 hours by the Safety Manager. Press enquiries are answered only by the Managing Director or the communications lead, Ruth Ahmed.',
      },
      { h: 2, text: 'Reports and investigation' },
      { h: 3, text: 'Incident report' },
      {
        p: 'Every incident, including near-misses, is recorded in the safety system within 24 hours on form SR-1. Level 3 and level 4 incidents are investigated by a team of at least two people who were not involved, and the investigation report is due within 10 working days.',
      },
      { h: 3, text: 'Learning from incidents' },
      {
        p: 'Each month the Safety Office publishes a summary of incidents and near-misses. The target for 2025 is at least 250 near-miss reports and zero lost-time injuries. Crews that report a near-miss that leads to a procedure change receive a safety award of 1,000 crowns.',
      },
      { h: 2, text: 'Post-incident support' },
      {
        p: 'Staff involved in a level 3 or level 4 incident are offered confidential counselling through the employee assistance programme within 48 hours, and may take up to 2 days of paid recovery leave.',
      },
    ],
  },
  {
    file: 'operations/vessel-maintenance.pdf',
    title: 'Vessel Maintenance Schedule',
    blocks: [
      {
        p: 'The maintenance yard at Lindholm keeps the fleet seaworthy and the class certificates valid. This schedule lists the inspection intervals that apply to all Halvorsen Riverworks vessels and the duties of captains and engineers. Owner: Henrik Dahl, Fleet Manager. Yard foreman: Bjorn Aas. Issued February 2025.',
      },
      { h: 2, text: 'Inspection intervals' },
      {
        table: [
          ['Check', 'Interval', 'Done by'],
          ['Daily engine check', 'Every 24 hours', 'Engineer on board'],
          ['Engine service', 'Every 500 running hours', 'Yard mechanics'],
          ['Battery health (Marta H.)', 'Every 3 months', 'Electrical team'],
          ['Dry-dock survey', 'Every 5 years', 'Classification society'],
          ['Hull thickness survey', 'Every 10 years', 'Classification society'],
          ['Life-saving equipment', 'Every 12 months', 'Safety Office'],
        ],
      },
      { h: 2, text: 'Daily checks' },
      {
        p: 'Before the first departure of the day, the engineer checks oil and coolant levels, bilge water, steering gear and navigation lights, and records the results in the electronic logbook. A vessel may not sail when a daily check has not been recorded.',
      },
      { h: 2, text: 'Planned maintenance' },
      { h: 3, text: 'Winter maintenance period' },
      {
        p: 'The main maintenance period runs from 5 January to 28 February, when ice limits traffic. Each motor vessel spends at least 10 working days at the Lindholm yard in this period. The slipway can take vessels up to 90 m long and 1,200 t lightweight.',
      },
      { h: 3, text: 'Spare parts' },
      {
        p: 'Critical spare parts (propeller shafts, steering pumps, generator control boards) are kept in stock at Lindholm. The minimum stock is two sets for the diesel vessels and one set for the Marta H. battery modules.',
      },
      { h: 2, text: 'Defect reporting' },
      {
        table: [
          ['Defect category', 'Example', 'Fix within'],
          ['A: safety critical', 'Steering failure, fire pump fault', 'Before next departure'],
          ['B: operational', 'Radar fault, winch defect', '72 hours'],
          ['C: cosmetic', 'Paint damage, cabin fittings', 'Next planned maintenance'],
        ],
      },
      {
        p: 'Defects are reported in the maintenance system with a photo. A category A defect puts the vessel out of service immediately; only the Fleet Manager can return it to service.',
      },
      { h: 2, text: 'Costs' },
      {
        p: 'The 2025 maintenance budget is 21.5 million crowns, of which 6 million is reserved for the dry-dock survey of the Brannvik Star. Unplanned repairs above 250,000 crowns follow the emergency purchase rules of the Procurement Policy.',
      },
    ],
  },
];

const DOCX_DOCS: SampleDoc[] = [
  {
    file: 'policies/data-retention.docx',
    title: 'Data Retention Schedule',
    blocks: [
      {
        p: 'This schedule says how long Halvorsen Riverworks keeps each kind of record and how records are destroyed when the period ends. It supports the Information Security Policy and data protection law. Owner: Priya Raman, Head of IT, with the data protection officer, Daniel Kowalski (privacy@halvorsen-riverworks.example). Version 1.6, 1 December 2024.',
      },
      { h: 2, text: 'Retention periods' },
      {
        p: 'Periods start at the end of the calendar year in which the record was closed, unless stated otherwise.',
      },
      {
        table: [
          ['Record type', 'Retention period', 'Owner'],
          ['Accounting records and invoices', '10 years', 'Finance'],
          ['Expense claims and receipts', '7 years', 'Finance'],
          ['Employee personnel files', '5 years after leaving', 'People and Culture'],
          ['Job applications (not hired)', '6 months', 'People and Culture'],
          ['Vessel logbooks', '15 years', 'Fleet Manager'],
          ['Incident investigation reports', '20 years', 'Safety Office'],
          ['Lock passage records', '3 years', 'Sagfors lock'],
          ['CCTV recordings at quays', '30 days', 'Security'],
          ['Dispatch radio recordings', '90 days', 'Dispatch centre'],
        ],
      },
      { h: 2, text: 'Legal hold' },
      {
        p: 'When a claim, an insurance case or an authority investigation is expected, the CFO may place a legal hold. Records under legal hold are never destroyed, even when their retention period has ended, until the hold is lifted in writing.',
      },
      { h: 2, text: 'Destruction of records' },
      { h: 3, text: 'Paper records' },
      {
        p: 'Paper records are shredded on site with a cross-cut shredder of security level P-4, or collected in locked bins by the certified contractor every second Thursday.',
      },
      { h: 3, text: 'Electronic records' },
      {
        p: 'Electronic records are deleted automatically by the archive system in the first week of February each year. Hard drives and tablets are physically destroyed, and a certificate of destruction is kept for 5 years.',
      },
      { h: 2, text: 'Requests from individuals' },
      {
        p: 'Anyone may ask which personal data we hold about them. Such requests go to the data protection officer and are answered within 30 days; the deadline can be extended once by 60 days for complex requests. Requests to delete data are refused only when a retention period in this schedule still applies.',
      },
      { h: 2, text: 'Review' },
      {
        p: 'This schedule is reviewed every 2 years by the Head of IT and the CFO. The next review is due in December 2026.',
      },
    ],
  },
  {
    file: 'operations/lock-scheduling.docx',
    title: 'Sagfors Lock Scheduling Rules',
    blocks: [
      {
        p: 'Halvorsen Riverworks operates the Sagfors lock under a concession from the regional water authority, running until 31 December 2033. The lock has two chambers and serves our own fleet as well as other shipping companies and leisure boats. Lock master: Viktor Engstrom. Bookings: extension 4500 or VHF channel 18.',
      },
      { h: 2, text: 'Chambers' },
      {
        table: [
          ['Chamber', 'Length', 'Width', 'Depth over sill', 'Lift'],
          ['Upstream chamber', '135 m', '12.5 m', '3.5 m', '7.2 m'],
          ['Downstream chamber', '95 m', '10.0 m', '3.2 m', '7.2 m'],
        ],
      },
      {
        p: 'A full lock cycle takes about 25 minutes in the upstream chamber and 18 minutes in the downstream chamber.',
      },
      { h: 2, text: 'Opening hours' },
      {
        list: [
          'Commercial season (1 March to 30 November): 05:00 to 23:00 every day.',
          'Winter season (1 December to end of February): 06:00 to 20:00, or two openings a day in winter mode.',
          'Leisure boats: 09:00 to 18:00 from 1 May to 30 September, in fixed slots every 2 hours.',
        ],
      },
      { h: 2, text: 'Booking a passage' },
      { h: 3, text: 'Booking windows' },
      {
        p: 'Commercial vessels book a passage at least 2 hours in advance and at most 7 days ahead. Vessels that arrive more than 30 minutes after their slot lose the slot and are given the next free one. Dangerous goods vessels must book at least 12 hours in advance and pass alone in the chamber.',
      },
      { h: 3, text: 'Priority order' },
      {
        p: 'Passages follow the booking order, with these exceptions in priority order: emergency and rescue vessels, then passenger vessels with a timetable, then vessels carrying dangerous goods, then all other commercial vessels. Leisure boats pass last.',
      },
      { h: 2, text: 'Lock fees' },
      {
        table: [
          ['Vessel', 'Fee per passage', 'Night surcharge (22:00 to 05:00)'],
          ['Commercial vessel up to 80 m', '1,150 crowns', '50 %'],
          ['Commercial vessel over 80 m', '1,900 crowns', '50 %'],
          ['Pushed convoy', '2,600 crowns', '50 %'],
          ['Leisure boat', '180 crowns', 'No night passages'],
        ],
      },
      {
        p: 'Halvorsen Riverworks vessels pay no fee; their passages are charged internally at cost. Fees are invoiced monthly and are due within 30 days.',
      },
      { h: 2, text: 'Closures' },
      {
        p: 'The lock closes for planned maintenance for 14 days each year in the second half of January, announced at least 3 months ahead. Unplanned closures are announced on VHF channel 18 and in the skipper notices on the website.',
      },
    ],
  },
  {
    file: 'people/training-and-certification.docx',
    title: 'Training and Certification',
    blocks: [
      {
        p: 'Halvorsen Riverworks pays for the certificates and training that each role requires and tracks expiry dates in the HR system, which sends a reminder 90 days before a certificate expires. Owner: Aino Virtanen, Director of People and Culture. Training coordinator: Lina Berggren (extension 4150). Version 3.1, January 2025.',
      },
      { h: 2, text: 'Required certificates' },
      {
        table: [
          ['Certificate', 'Required for', 'Valid for', 'Refresher'],
          [
            'Inland Master, class A',
            'Captains of convoys and container barges',
            '10 years',
            'Medical every 2 years',
          ],
          [
            'Inland Master, class B',
            'Captains of motor barges',
            '10 years',
            'Medical every 2 years',
          ],
          [
            'ADN dangerous goods expert',
            'Crew on class 3 bulk cargo',
            '5 years',
            '2-day refresher course',
          ],
          ['Radar navigation', 'All captains', '5 years', 'Simulator day'],
          ['Basic safety training', 'All crew', '5 years', '1-day refresher'],
          ['First aid', 'At least 2 people per vessel and per site', '2 years', '8-hour course'],
          ['Crane operator', 'Quay and yard crane drivers', '5 years', 'Practical test'],
        ],
      },
      {
        p: 'Nobody may work in a role whose required certificate has expired. Managers check the certificate status before each rotation.',
      },
      { h: 2, text: 'Training budget' },
      {
        p: 'Beyond required certificates, every employee has a personal development budget of 8,000 crowns and up to 3 paid training days per year. Unused budget does not carry over. Requests are approved by the line manager; requests above 8,000 crowns need the Director of People and Culture.',
      },
      { h: 3, text: 'Study support' },
      {
        p: 'For a longer qualification, such as the Inland Master class A for an experienced deckhand, the cooperative pays tuition and exam fees and gives 10 days of paid study leave. Staff who leave within 24 months of completing a course paid by the cooperative repay part of the cost: 100 % in the first 12 months and 50 % in the following 12 months.',
      },
      { h: 2, text: 'Drills' },
      {
        list: [
          'Man-overboard drill: every vessel, every 3 months.',
          'Fire drill: every vessel, every 3 months, alternating with the man-overboard drill.',
          'Oil spill response drill: each site, twice a year, with the regional water authority once a year.',
          'Evacuation drill: offices and the dispatch centre, once a year.',
        ],
      },
      { h: 2, text: 'Records' },
      {
        p: 'Training records and certificate copies are uploaded to the HR system within 5 working days of completion. The Safety Office audits certificate status on 10 % of vessels each quarter.',
      },
    ],
  },
];

// ---------- PDF ----------

const PAGE = { width: 595.28, height: 841.89, margin: 56 };

function wrap(text: string, font: PDFFont, size: number, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    const candidate = line ? `${line} ${word}` : word;
    if (line && font.widthOfTextAtSize(candidate, size) > width) {
      lines.push(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (line) lines.push(line);
  return lines;
}

async function renderPdf(doc: SampleDoc): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  pdf.setTitle(doc.title);
  pdf.setAuthor('Halvorsen Riverworks (fictional)');
  pdf.setProducer('ai4rag-serverless scripts/make-examples.ts');
  pdf.setCreator('pdf-lib');
  pdf.setCreationDate(FIXED_DATE);
  pdf.setModificationDate(FIXED_DATE);
  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  const contentWidth = PAGE.width - 2 * PAGE.margin;
  let page: PDFPage = pdf.addPage([PAGE.width, PAGE.height]);
  let y = PAGE.height - PAGE.margin;

  const ensure = (height: number): void => {
    if (y - height < PAGE.margin) {
      page = pdf.addPage([PAGE.width, PAGE.height]);
      y = PAGE.height - PAGE.margin;
    }
  };
  const text = (value: string, x: number, font: PDFFont, size: number): void => {
    page.drawText(value, { x, y, size, font, color: rgb(0.1, 0.1, 0.1) });
  };
  const paragraph = (value: string, font: PDFFont, size: number, gapAfter: number): void => {
    for (const line of wrap(value, font, size, contentWidth)) {
      ensure(size * 1.4);
      y -= size * 1.4;
      text(line, PAGE.margin, font, size);
    }
    y -= gapAfter;
  };

  paragraph(doc.title, bold, 18, 10);
  for (const block of doc.blocks) {
    if ('h' in block) {
      ensure(40);
      y -= 6;
      paragraph(block.text, bold, block.h === 2 ? 14 : 12, 4);
    } else if ('p' in block) {
      paragraph(block.p, regular, 10.5, 8);
    } else if ('list' in block) {
      for (const item of block.list) paragraph(`- ${item}`, regular, 10.5, 2);
      y -= 6;
    } else {
      const size = 9.5;
      const columns = block.table[0]?.length ?? 1;
      const natural = Array.from({ length: columns }, (_, c) =>
        Math.max(...block.table.map((row) => bold.widthOfTextAtSize(row[c] ?? '', size))),
      );
      const total = natural.reduce((sum, w) => sum + w, 0);
      const widths = natural.map((w) => (w / total) * contentWidth);
      // Keep a table on one page: a split table would be read back as two tables.
      ensure(block.table.length * (size * 1.35 + 3) + 8);
      for (const [r, row] of block.table.entries()) {
        const font = r === 0 ? bold : regular;
        const cells = row.map((cell, c) => wrap(cell, font, size, (widths[c] ?? 50) - 8));
        const height = Math.max(...cells.map((lines) => lines.length)) * size * 1.35;
        ensure(height + 4);
        let x = PAGE.margin;
        const top = y;
        for (const [c, lines] of cells.entries()) {
          y = top;
          for (const line of lines) {
            y -= size * 1.35;
            text(line, x, font, size);
          }
          x += widths[c] ?? 50;
        }
        y = top - height - 3;
      }
      y -= 8;
    }
  }
  return pdf.save();
}

// ---------- DOCX ----------

async function renderDocx(doc: SampleDoc): Promise<Buffer> {
  const children: (Paragraph | Table)[] = [
    new Paragraph({ text: doc.title, heading: HeadingLevel.HEADING_1 }),
  ];
  for (const block of doc.blocks) {
    if ('h' in block) {
      children.push(
        new Paragraph({
          text: block.text,
          heading: block.h === 2 ? HeadingLevel.HEADING_2 : HeadingLevel.HEADING_3,
        }),
      );
    } else if ('p' in block) {
      children.push(new Paragraph({ text: block.p }));
    } else if ('list' in block) {
      for (const item of block.list)
        children.push(new Paragraph({ text: item, bullet: { level: 0 } }));
    } else {
      children.push(
        new Table({
          width: { size: 100, type: WidthType.PERCENTAGE },
          rows: block.table.map(
            (row, r) =>
              new TableRow({
                tableHeader: r === 0,
                children: row.map(
                  (cell) =>
                    new TableCell({
                      children: [
                        new Paragraph({ children: [new TextRun({ text: cell, bold: r === 0 })] }),
                      ],
                    }),
                ),
              }),
          ),
        }),
      );
    }
  }
  const document = new Document({
    creator: 'Halvorsen Riverworks (fictional)',
    title: doc.title,
    sections: [{ children }],
  });
  return Packer.toBuffer(document);
}

async function main(): Promise<void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../examples/docs');
  for (const doc of PDF_DOCS) {
    const target = path.join(root, doc.file);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, await renderPdf(doc));
    console.log(`wrote ${path.relative(process.cwd(), target)}`);
  }
  for (const doc of DOCX_DOCS) {
    const target = path.join(root, doc.file);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, await renderDocx(doc));
    console.log(`wrote ${path.relative(process.cwd(), target)}`);
  }
}

await main();
