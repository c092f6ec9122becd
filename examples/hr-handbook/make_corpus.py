"""Write passages.jsonl and queries.tsv of the fictional Larkspur Analytics handbook.

The text is reljudge's own writing, for examples and tests. Run: python make_corpus.py
"""

import json
from pathlib import Path

CHUNKS = [
    ("Parental leave", "Birth parents at Larkspur Analytics receive 16 weeks of fully paid maternity leave. Leave may start up to four weeks before the expected due date. Employees become eligible after 90 days of employment, and the 16 weeks are paid at 100 percent of base salary."),
    ("Parental leave", "Non-birth parents, including fathers, partners and adoptive parents, receive 10 weeks of paid parental leave, which can be taken in one block or in two blocks within the first year after the child arrives."),
    ("Parental leave", "To request maternity or parental leave, tell your manager and submit the leave form in the People portal at least 30 days before the planned start, or as soon as is practical. HR will confirm your dates and pay in writing."),
    ("Parental leave", "Returning from parental leave, employees may work a phased schedule of 60 percent hours at full pay for the first four weeks back. Nursing rooms are available on every floor of the London and Austin offices."),
    ("Family events", "The company celebrates new arrivals: teams often organise a small gift. Photos of babies and pets are welcome in the #family channel. Please keep the channel friendly and free of work requests."),
    ("Expenses", "Business expenses are reimbursed when they are reasonable, necessary for your work and approved by your manager. Submit each claim in the Expensify app with an itemised receipt within 30 days of the purchase."),
    ("Expenses", "Claims submitted more than 90 days after the expense will not be reimbursed except with written approval from Finance. Reimbursements are paid with the next monthly payroll after approval."),
    ("Expenses", "Meals with clients may be expensed up to 75 dollars per person including tip. Alcohol is reimbursed only at client events approved in advance by a director. Team lunches need a budget code from your manager."),
    ("Expenses", "Lost receipts: if a receipt is lost, complete the missing receipt declaration in Expensify describing the date, amount, vendor and business purpose. More than three declarations a year require Finance review."),
    ("Company card", "Some roles receive a corporate credit card. The card is for business purchases only and its statement must be reconciled in Expensify every month. Personal use of the card, even if repaid, is a policy violation."),
    ("Remote work", "Larkspur is remote-friendly. Employees may work from home up to three days a week, with Tuesdays and Thursdays as shared office days for teams located near an office. Fully remote roles are marked as such in the offer letter."),
    ("Remote work", "Working from another country is allowed for up to 30 days in any 12 months, for tax and immigration reasons, and needs approval from your manager and the People team at least two weeks before you travel."),
    ("Remote work", "Remote employees receive a one-time home office allowance of 500 dollars for a desk, chair or monitor, and a monthly internet stipend of 40 dollars paid through payroll."),
    ("Remote work", "When working remotely, be reachable during your team's core hours of 10:00 to 16:00 local time, keep your calendar up to date, and join video meetings with your camera on when you are able."),
    ("Sick leave", "Employees receive 10 paid sick days per calendar year. Sick days can be used for your own illness, medical appointments, or to care for a sick family member. Unused sick days do not carry over to the next year."),
    ("Sick leave", "If you are sick, tell your manager before the start of your working day and record the absence in the People portal. A doctor's note is required only for absences longer than five consecutive working days."),
    ("Long-term illness", "For illness lasting longer than your paid sick days, short-term disability insurance pays 70 percent of base salary for up to 26 weeks, after a waiting period of 7 days. Contact HR to start a claim."),
    ("Dress code", "There is no formal dress code in our offices. Dress comfortably and appropriately for your day. Clothing with offensive slogans or images is not acceptable."),
    ("Dress code", "When meeting clients or speaking at external events, business casual is expected: collared shirts or blouses, trousers or skirts, and clean closed shoes. Ask your manager if you are unsure what a client expects."),
    ("Office safety", "Lab areas in the Austin office require closed-toe shoes and safety glasses, which are provided at the entrance of each lab. Long hair must be tied back near moving equipment."),
    ("Vacation", "Full-time employees receive 25 days of paid vacation per year, accrued monthly, plus the public holidays of their country of employment. Part-time employees receive vacation in proportion to their hours."),
    ("Vacation", "Up to five unused vacation days may be carried over into the first quarter of the next year; days not used by March 31 expire. Vacation requests should be made at least two weeks ahead in the People portal."),
    ("Company holidays", "The company closes between December 24 and January 1. These closure days are given in addition to your 25 vacation days, so you do not need to book them as leave."),
    ("Sabbatical", "After five years of service, employees may take a four-week paid sabbatical, to be scheduled with their manager at least three months in advance. Sabbaticals cannot be combined with vacation into more than six weeks away."),
    ("Onboarding", "On your first day, you will meet your onboarding buddy, receive your laptop and badge, and complete the security training. Your manager will share a 30-60-90 day plan during your first week."),
    ("Onboarding", "In the first week, new hires attend the company welcome session on Monday, set up their accounts with IT, and have one-to-one meetings with each team member. Payroll and benefits enrolment must be finished within 30 days."),
    ("Onboarding", "The onboarding buddy is an experienced colleague outside your direct team who answers practical questions during your first three months. Buddies meet new hires at least once a week."),
    ("IT security", "Passwords must be at least 14 characters long and unique to your Larkspur account. Use the company password manager to create and store them. Never share a password, even with IT staff."),
    ("IT security", "Multi-factor authentication is mandatory for email, the VPN and all cloud tools. Use the authenticator app on your phone; text message codes are only allowed as a backup."),
    ("IT security", "Report suspected phishing by using the Report button in your email client. If you clicked a link or entered your password, contact the IT security desk immediately on extension 4400."),
    ("IT equipment", "Laptops are replaced every three years. Lost or stolen devices must be reported to IT within 24 hours. Installing software that is not on the approved list requires a ticket to the IT service desk."),
    ("Travel", "Book all business travel through the Navan travel portal. Flights under six hours must be booked in economy class; premium economy is allowed for flights of six hours or more, and business class needs director approval."),
    ("Travel", "Hotels should be within the city rate limits shown in Navan, for example 250 dollars per night in London and 200 in Austin. A daily meal allowance of 60 dollars applies while travelling."),
    ("Travel", "Travel insurance covers all employees on business trips. In an emergency abroad, call the 24-hour assistance number printed on the back of your badge."),
    ("Health benefits", "Larkspur pays 90 percent of health insurance premiums for employees and 75 percent for dependants. Dental and vision plans are included. Enrolment happens during onboarding or after a qualifying life event."),
    ("Retirement", "In the United States, Larkspur matches 401(k) contributions dollar for dollar up to 5 percent of base salary. Matching contributions vest immediately. In the UK, the company pays 8 percent into the workplace pension."),
    ("Wellbeing", "Every employee receives a yearly wellbeing budget of 600 dollars for gym memberships, fitness classes, meditation apps or sports equipment. Claim it through Expensify with the wellbeing category."),
    ("Learning", "Each employee has a learning budget of 1,500 dollars a year for courses, conferences and books, and two learning days. Spending over the budget needs approval from your director."),
    ("Performance reviews", "Performance reviews take place twice a year, in March and September. Each review combines a self-assessment, feedback from two peers and your manager's assessment, followed by a one-hour conversation."),
    ("Performance reviews", "Salary adjustments and promotions are decided once a year after the March review. Ratings are calibrated across teams so that similar work receives similar ratings."),
    ("Goals", "Goals are set each quarter with your manager and tracked in Lattice. Good goals are specific and measurable, and each person should have three to five of them."),
    ("Code of conduct", "Harassment, discrimination and bullying are not tolerated. Report any concern to your manager, to HR, or anonymously through the EthicsLine website or phone line, which is available 24 hours a day."),
    ("Code of conduct", "Reports of harassment are investigated promptly and confidentially by HR. Retaliation against anyone who raises a concern in good faith is itself a serious violation and leads to disciplinary action."),
    ("Code of conduct", "Gifts from suppliers or clients worth more than 50 dollars must be declared to Legal. Never accept cash or gifts during an active procurement."),
    ("Offices", "The London office is open from 7:00 to 20:00 on weekdays. Visitors must be registered at reception in advance and accompanied at all times. The office has bike storage and showers on the ground floor."),
    ("Offices", "Parking at the Austin office is free for employees; register your car plate with reception. There is no staff parking in London; the company subsidises public transport passes by 50 percent."),
]

QUERIES = [
    ("hr01", "What is the maternity leave policy?"),
    ("hr02", "How do I claim business expenses and what is the deadline?"),
    ("hr03", "Can I work remotely from another country?"),
    ("hr04", "How many sick days do I get?"),
    ("hr05", "Is there a dress code?"),
    ("hr06", "How many vacation days do employees get?"),
    ("hr07", "What happens during the first week of onboarding?"),
    ("hr08", "What are the password requirements?"),
    ("hr09", "Which class can I fly in on business trips?"),
    ("hr10", "Does the company match 401k contributions?"),
    ("hr11", "When are performance reviews held?"),
    ("hr12", "How do I report harassment?"),
]


def main() -> None:
    """Write the two files next to this script."""
    here = Path(__file__).resolve().parent
    with open(here / "passages.jsonl", "w") as f:
        for i, (title, text) in enumerate(CHUNKS, 1):
            f.write(json.dumps({"docid": f"chunk_{i:02d}", "title": title, "text": text}) + "\n")
    with open(here / "queries.tsv", "w") as f:
        f.writelines(f"{qid}\t{text}\n" for qid, text in QUERIES)


if __name__ == "__main__":
    main()
