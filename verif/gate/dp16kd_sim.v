// Behavioural model of the Lattice ECP5 DP16KD block RAM, for gate-level simulation of
// netlists from yosys `synth_ecp5` (yosys ships DP16KD only as a blackbox). Written from
// the ECP5 sysMEM usage guide (Lattice TN1264: 18 Kbit, true dual port in x1/x2/x4/x9/x18,
// pseudo dual port x36) and from how yosys's brams_map_16kd.v drives the cell:
//
//   * storage: 1024 rows of 18 bits; INITVAL_xx holds rows 16*xx .. 16*xx+15, row i in bits
//     [20*i +: 18] (the layout yosys's init_slice() writes);
//   * a port of width 18 addresses rows with AD[13:4]; AD[1:0] are its byte (9-bit)
//     write enables; width 9 addresses 9-bit halves with AD[13:3] (half AD[3]); widths 4,
//     2, 1 address AD[13:2], AD[13:1], AD[13:0] within the 16 data bits of a row (bits
//     [7:0] and [16:9]; those modes have no parity bits);
//   * width 36 (pseudo dual port: port A writes, port B reads): rows 2*a and 2*a+1 with
//     a = AD[13:5]; write data DIA (low 18) and DIB (high 18), AD[3:0] of port A its four
//     byte enables; read data DOA (low 18) and DOB (high 18); a port B of width < 36 in
//     this mode reads out on DOB (yosys maps PORT_R_RD_DATA to DO[35:18]);
//   * on a clock edge with CE: RST clears the output (RESETMODE SYNC); a write stores the
//     enabled bytes; the port's own output follows WRITEMODE (NORMAL: unchanged while
//     writing, WRITETHROUGH: the new data, READBEFOREWRITE: the old data); a read reads.
//     A read of a row the other port writes at the same edge returns X in the bytes being
//     written (the hardware gives them no defined value; yosys adds its own bypass where
//     the design needs one; unwritten bytes keep their contents), so a netlist that
//     depends on a collision fails visibly;
//   * REGMODE OUTREG adds one output register; CSDECODE, OCE and the GSR are modelled
//     only as yosys uses them (chip selects tied to 0 and decode 0b000, OCE 1).
`timescale 1ns / 1ps
module DP16KD(
  input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
  input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
  input CEA, OCEA, CLKA, WEA, RSTA,
  input CSA2, CSA1, CSA0,
  output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
  input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
  input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
  input CEB, OCEB, CLKB, WEB, RSTB,
  input CSB2, CSB1, CSB0,
  output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter CLKAMUX = "CLKA";
  parameter CLKBMUX = "CLKB";
  parameter GSR = "ENABLED";
  parameter [319:0] INITVAL_00 = 320'h0, INITVAL_01 = 320'h0, INITVAL_02 = 320'h0, INITVAL_03 = 320'h0;
  parameter [319:0] INITVAL_04 = 320'h0, INITVAL_05 = 320'h0, INITVAL_06 = 320'h0, INITVAL_07 = 320'h0;
  parameter [319:0] INITVAL_08 = 320'h0, INITVAL_09 = 320'h0, INITVAL_0A = 320'h0, INITVAL_0B = 320'h0;
  parameter [319:0] INITVAL_0C = 320'h0, INITVAL_0D = 320'h0, INITVAL_0E = 320'h0, INITVAL_0F = 320'h0;
  parameter [319:0] INITVAL_10 = 320'h0, INITVAL_11 = 320'h0, INITVAL_12 = 320'h0, INITVAL_13 = 320'h0;
  parameter [319:0] INITVAL_14 = 320'h0, INITVAL_15 = 320'h0, INITVAL_16 = 320'h0, INITVAL_17 = 320'h0;
  parameter [319:0] INITVAL_18 = 320'h0, INITVAL_19 = 320'h0, INITVAL_1A = 320'h0, INITVAL_1B = 320'h0;
  parameter [319:0] INITVAL_1C = 320'h0, INITVAL_1D = 320'h0, INITVAL_1E = 320'h0, INITVAL_1F = 320'h0;
  parameter [319:0] INITVAL_20 = 320'h0, INITVAL_21 = 320'h0, INITVAL_22 = 320'h0, INITVAL_23 = 320'h0;
  parameter [319:0] INITVAL_24 = 320'h0, INITVAL_25 = 320'h0, INITVAL_26 = 320'h0, INITVAL_27 = 320'h0;
  parameter [319:0] INITVAL_28 = 320'h0, INITVAL_29 = 320'h0, INITVAL_2A = 320'h0, INITVAL_2B = 320'h0;
  parameter [319:0] INITVAL_2C = 320'h0, INITVAL_2D = 320'h0, INITVAL_2E = 320'h0, INITVAL_2F = 320'h0;
  parameter [319:0] INITVAL_30 = 320'h0, INITVAL_31 = 320'h0, INITVAL_32 = 320'h0, INITVAL_33 = 320'h0;
  parameter [319:0] INITVAL_34 = 320'h0, INITVAL_35 = 320'h0, INITVAL_36 = 320'h0, INITVAL_37 = 320'h0;
  parameter [319:0] INITVAL_38 = 320'h0, INITVAL_39 = 320'h0, INITVAL_3A = 320'h0, INITVAL_3B = 320'h0;
  parameter [319:0] INITVAL_3C = 320'h0, INITVAL_3D = 320'h0, INITVAL_3E = 320'h0, INITVAL_3F = 320'h0;

  localparam PDP = (DATA_WIDTH_A == 36) || (DATA_WIDTH_B == 36);

  reg [17:0] mem [0:1023];
  wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
  wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
  wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
  wire clka = (CLKAMUX == "INV") ? ~CLKA : CLKA;
  wire clkb = (CLKBMUX == "INV") ? ~CLKB : CLKB;

  reg [17:0] qa, qb, qa_r, qb_r;     // port outputs (PDP: qa low half, qb high half)
  wire [17:0] oa = (REGMODE_A == "OUTREG") ? qa_r : qa;
  wire [17:0] ob = (REGMODE_B == "OUTREG") ? qb_r : qb;
  assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = oa;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = ob;

  integer i;
  initial begin
    for (i = 0; i < 16; i = i + 1) begin
      mem['h00 * 16 + i] = INITVAL_00[20 * i +: 18]; mem['h01 * 16 + i] = INITVAL_01[20 * i +: 18];
      mem['h02 * 16 + i] = INITVAL_02[20 * i +: 18]; mem['h03 * 16 + i] = INITVAL_03[20 * i +: 18];
      mem['h04 * 16 + i] = INITVAL_04[20 * i +: 18]; mem['h05 * 16 + i] = INITVAL_05[20 * i +: 18];
      mem['h06 * 16 + i] = INITVAL_06[20 * i +: 18]; mem['h07 * 16 + i] = INITVAL_07[20 * i +: 18];
      mem['h08 * 16 + i] = INITVAL_08[20 * i +: 18]; mem['h09 * 16 + i] = INITVAL_09[20 * i +: 18];
      mem['h0A * 16 + i] = INITVAL_0A[20 * i +: 18]; mem['h0B * 16 + i] = INITVAL_0B[20 * i +: 18];
      mem['h0C * 16 + i] = INITVAL_0C[20 * i +: 18]; mem['h0D * 16 + i] = INITVAL_0D[20 * i +: 18];
      mem['h0E * 16 + i] = INITVAL_0E[20 * i +: 18]; mem['h0F * 16 + i] = INITVAL_0F[20 * i +: 18];
      mem['h10 * 16 + i] = INITVAL_10[20 * i +: 18]; mem['h11 * 16 + i] = INITVAL_11[20 * i +: 18];
      mem['h12 * 16 + i] = INITVAL_12[20 * i +: 18]; mem['h13 * 16 + i] = INITVAL_13[20 * i +: 18];
      mem['h14 * 16 + i] = INITVAL_14[20 * i +: 18]; mem['h15 * 16 + i] = INITVAL_15[20 * i +: 18];
      mem['h16 * 16 + i] = INITVAL_16[20 * i +: 18]; mem['h17 * 16 + i] = INITVAL_17[20 * i +: 18];
      mem['h18 * 16 + i] = INITVAL_18[20 * i +: 18]; mem['h19 * 16 + i] = INITVAL_19[20 * i +: 18];
      mem['h1A * 16 + i] = INITVAL_1A[20 * i +: 18]; mem['h1B * 16 + i] = INITVAL_1B[20 * i +: 18];
      mem['h1C * 16 + i] = INITVAL_1C[20 * i +: 18]; mem['h1D * 16 + i] = INITVAL_1D[20 * i +: 18];
      mem['h1E * 16 + i] = INITVAL_1E[20 * i +: 18]; mem['h1F * 16 + i] = INITVAL_1F[20 * i +: 18];
      mem['h20 * 16 + i] = INITVAL_20[20 * i +: 18]; mem['h21 * 16 + i] = INITVAL_21[20 * i +: 18];
      mem['h22 * 16 + i] = INITVAL_22[20 * i +: 18]; mem['h23 * 16 + i] = INITVAL_23[20 * i +: 18];
      mem['h24 * 16 + i] = INITVAL_24[20 * i +: 18]; mem['h25 * 16 + i] = INITVAL_25[20 * i +: 18];
      mem['h26 * 16 + i] = INITVAL_26[20 * i +: 18]; mem['h27 * 16 + i] = INITVAL_27[20 * i +: 18];
      mem['h28 * 16 + i] = INITVAL_28[20 * i +: 18]; mem['h29 * 16 + i] = INITVAL_29[20 * i +: 18];
      mem['h2A * 16 + i] = INITVAL_2A[20 * i +: 18]; mem['h2B * 16 + i] = INITVAL_2B[20 * i +: 18];
      mem['h2C * 16 + i] = INITVAL_2C[20 * i +: 18]; mem['h2D * 16 + i] = INITVAL_2D[20 * i +: 18];
      mem['h2E * 16 + i] = INITVAL_2E[20 * i +: 18]; mem['h2F * 16 + i] = INITVAL_2F[20 * i +: 18];
      mem['h30 * 16 + i] = INITVAL_30[20 * i +: 18]; mem['h31 * 16 + i] = INITVAL_31[20 * i +: 18];
      mem['h32 * 16 + i] = INITVAL_32[20 * i +: 18]; mem['h33 * 16 + i] = INITVAL_33[20 * i +: 18];
      mem['h34 * 16 + i] = INITVAL_34[20 * i +: 18]; mem['h35 * 16 + i] = INITVAL_35[20 * i +: 18];
      mem['h36 * 16 + i] = INITVAL_36[20 * i +: 18]; mem['h37 * 16 + i] = INITVAL_37[20 * i +: 18];
      mem['h38 * 16 + i] = INITVAL_38[20 * i +: 18]; mem['h39 * 16 + i] = INITVAL_39[20 * i +: 18];
      mem['h3A * 16 + i] = INITVAL_3A[20 * i +: 18]; mem['h3B * 16 + i] = INITVAL_3B[20 * i +: 18];
      mem['h3C * 16 + i] = INITVAL_3C[20 * i +: 18]; mem['h3D * 16 + i] = INITVAL_3D[20 * i +: 18];
      mem['h3E * 16 + i] = INITVAL_3E[20 * i +: 18]; mem['h3F * 16 + i] = INITVAL_3F[20 * i +: 18];
    end
    qa = 0; qb = 0; qa_r = 0; qb_r = 0;
  end

  // ---- addressing: which row, and which of its bits, a port of width w reaches
  function [9:0] row_of(input [13:0] ad, input integer w);
    begin
      case (w)
        18: row_of = ad[13:4];
        9: row_of = ad[13:4];
        4: row_of = ad[13:4];
        2: row_of = ad[13:4];
        default: row_of = ad[13:4];
      endcase
    end
  endfunction
  // bit mask of the row a narrow port (w < 18) reaches, and the position of its lowest bit
  function integer lsb_of(input [13:0] ad, input integer w);
    integer k;
    begin
      case (w)
        9: lsb_of = ad[3] ? 9 : 0;
        4: begin k = ad[3:2]; lsb_of = (k < 2) ? 4 * k : 9 + 4 * (k - 2); end
        2: begin k = ad[3:1]; lsb_of = (k < 4) ? 2 * k : 9 + 2 * (k - 4); end
        1: begin k = ad[3:0]; lsb_of = (k < 8) ? k : 9 + (k - 8); end
        default: lsb_of = 0;
      endcase
    end
  endfunction

  function [17:0] read_narrow(input [17:0] word, input [13:0] ad, input integer w);
    integer l;
    begin
      l = lsb_of(ad, w);
      read_narrow = (w >= 18) ? word : ((word >> l) & ((18'h1 << w) - 1));
    end
  endfunction

  function [17:0] write_narrow(input [17:0] word, input [17:0] din, input [13:0] ad, input integer w);
    integer l;
    reg [17:0] m;
    begin
      l = lsb_of(ad, w);
      m = ((18'h1 << w) - 1) << l;
      write_narrow = (word & ~m) | ((din << l) & m);
    end
  endfunction

  // byte-enabled write of an 18-bit row
  function [17:0] write_be(input [17:0] word, input [17:0] din, input [1:0] be);
    begin
      write_be = word;
      if (be[0]) write_be[8:0] = din[8:0];
      if (be[1]) write_be[17:9] = din[17:9];
    end
  endfunction

  // the bits of a row a port of width w writes at address ad with byte enables be (w = 18)
  function [17:0] wmask(input [13:0] ad, input integer w);
    begin
      if (w == 18) wmask = {{9{ad[1]}}, {9{ad[0]}}};
      else wmask = ((18'h1 << w) - 1) << lsb_of(ad, w);
    end
  endfunction
  // a row as read while the other port writes the bits `m` of it at the same edge (header)
  function [17:0] collide(input [17:0] word, input hit, input [17:0] m);
    integer k;
    begin
      collide = word;
      for (k = 0; k < 18; k = k + 1)
        if (hit && m[k]) collide[k] = 1'bx;
    end
  endfunction

  // ---- same-edge collisions between the ports (see the header)
  wire [9:0] ra = PDP ? {ada[13:5], 1'b0} : row_of(ada, DATA_WIDTH_A);
  wire [9:0] rb = PDP ? {adb[13:5], 1'b0} : row_of(adb, DATA_WIDTH_B);
  wire a_wr = CEA & WEA;
  wire b_wr = !PDP & CEB & WEB;

  generate if (PDP) begin : pdp
    // port A writes 36 bits (DIA low, DIB high) into rows 2a, 2a+1; port B reads
    wire [9:0] wrow = {ada[13:5], 1'b0};
    wire [9:0] rrow = {adb[13:5], 1'b0};
    reg [17:0] lo, hi;
    always @(posedge clka) begin
      if (CEA && WEA) begin
        if (DATA_WIDTH_A == 36) begin
          mem[wrow] <= write_be(mem[wrow], dia, ada[1:0]);
          mem[wrow + 1] <= write_be(mem[wrow + 1], dib, ada[3:2]);
        end
      end
    end
    always @(posedge clkb) begin
      if (CEB) begin
        if (RSTB && RESETMODE == "SYNC") begin
          qa <= 0; qb <= 0;
        end else begin
          lo = mem[rrow]; hi = mem[rrow + 1];
          if (CEA && WEA && wrow == rrow) begin      // the bytes port A writes now: X
            if (ada[0]) lo[8:0] = 9'bx;
            if (ada[1]) lo[17:9] = 9'bx;
            if (ada[2]) hi[8:0] = 9'bx;
            if (ada[3]) hi[17:9] = 9'bx;
          end
          if (DATA_WIDTH_B == 36) begin
            qa <= lo; qb <= hi;
          end else begin
            // narrower read port of the PDP mapping: data on DOB, address below AD[5]
            qb <= read_narrow(adb[4] ? hi : lo, adb, DATA_WIDTH_B);
          end
        end
      end
      if (OCEB) begin qa_r <= qa; qb_r <= qb; end
    end
  end else begin : tdp
    always @(posedge clka) begin
      if (CEA) begin
        if (RSTA && RESETMODE == "SYNC") qa <= 0;
        if (WEA) begin
          if (DATA_WIDTH_A == 18) mem[ra] <= write_be(mem[ra], dia, ada[1:0]);
          else mem[ra] <= write_narrow(mem[ra], dia, ada, DATA_WIDTH_A);
          if (!(RSTA && RESETMODE == "SYNC")) begin
            if (WRITEMODE_A == "WRITETHROUGH")
              qa <= (DATA_WIDTH_A == 18) ? write_be(mem[ra], dia, ada[1:0])
                                         : read_narrow(write_narrow(mem[ra], dia, ada, DATA_WIDTH_A), ada, DATA_WIDTH_A);
            else if (WRITEMODE_A == "READBEFOREWRITE")
              qa <= read_narrow(mem[ra], ada, DATA_WIDTH_A);
          end
        end else if (!(RSTA && RESETMODE == "SYNC")) begin
          qa <= read_narrow(collide(mem[ra], b_wr && rb == ra, wmask(adb, DATA_WIDTH_B)), ada, DATA_WIDTH_A);
        end
      end
      if (OCEA) qa_r <= qa;
    end
    always @(posedge clkb) begin
      if (CEB) begin
        if (RSTB && RESETMODE == "SYNC") qb <= 0;
        if (WEB) begin
          if (DATA_WIDTH_B == 18) mem[rb] <= write_be(mem[rb], dib, adb[1:0]);
          else mem[rb] <= write_narrow(mem[rb], dib, adb, DATA_WIDTH_B);
          if (!(RSTB && RESETMODE == "SYNC")) begin
            if (WRITEMODE_B == "WRITETHROUGH")
              qb <= (DATA_WIDTH_B == 18) ? write_be(mem[rb], dib, adb[1:0])
                                         : read_narrow(write_narrow(mem[rb], dib, adb, DATA_WIDTH_B), adb, DATA_WIDTH_B);
            else if (WRITEMODE_B == "READBEFOREWRITE")
              qb <= read_narrow(mem[rb], adb, DATA_WIDTH_B);
          end
        end else if (!(RSTB && RESETMODE == "SYNC")) begin
          qb <= read_narrow(collide(mem[rb], a_wr && ra == rb, wmask(ada, DATA_WIDTH_A)), adb, DATA_WIDTH_B);
        end
      end
      if (OCEB) qb_r <= qb;
    end
  end endgenerate

  // RESETMODE ASYNC: RST clears the output at once (yosys ties it low; kept for completeness)
  always @(posedge RSTA) if (RESETMODE == "ASYNC") begin qa = 0; qa_r = 0; end
  always @(posedge RSTB) if (RESETMODE == "ASYNC") begin qb = 0; qb_r = 0; if (PDP) qa = 0; end
endmodule
